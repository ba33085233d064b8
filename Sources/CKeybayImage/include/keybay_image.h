// SPDX-License-Identifier: Apache-2.0
/* The file of the image (executable or shared library) that holds this code: the plugin search
 * looks beside libkeybay.so.1 when Keybay is loaded as a library. */
#ifndef KEYBAY_IMAGE_H
#define KEYBAY_IMAGE_H

/* The resolved path of the shared library holding this code (free it); NULL when the code is in
 * the executable itself, or when it cannot be told. */
char *keybay_image_path(void);

#endif

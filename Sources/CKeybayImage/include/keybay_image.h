/* The file of the image (executable or shared library) that holds this code: the plugin search
 * looks beside libkeybay.so.1 when Keybay is loaded as a library. */
#ifndef KEYBAY_IMAGE_H
#define KEYBAY_IMAGE_H

/* The image's resolved path (free it), or NULL when it cannot be told. */
char *keybay_image_path(void);

#endif

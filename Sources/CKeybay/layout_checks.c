// SPDX-License-Identifier: Apache-2.0
// The C API's structs as the header lays them out; the library reads a caller's struct only
// within its struct_size, so these offsets may never change within version 1.
#include <stddef.h>
#include "keybay/keybay.h"

_Static_assert(offsetof(keybay_interaction, abi_version) == 0, "abi_version first");
_Static_assert(offsetof(keybay_interaction, struct_size) == 4, "struct_size second");
_Static_assert(offsetof(keybay_open_options, struct_size) == 0, "struct_size first");
_Static_assert(KEYBAY_ERR_NOT_FOUND == 31, "the C API's own code follows the library's");

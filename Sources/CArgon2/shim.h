// SPDX-License-Identifier: Apache-2.0
#include <argon2.h>

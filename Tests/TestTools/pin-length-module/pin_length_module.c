// SPDX-License-Identifier: Apache-2.0
/*
 * pin_length_module.so — a PKCS#11 module for Pkcs11Tests (test support only; built by the test
 * with cc): SoftHSM2's module (SOFTHSM_MODULE, named at build time) with one change: C_Login
 * refuses a PIN outside the length range the token reports (CK_TOKEN_INFO's ulMinPinLen and
 * ulMaxPinLen) with CKR_PIN_LEN_RANGE, as a token that checks a PIN's length before the PIN does.
 * SoftHSM itself answers a wrong PIN of any length with CKR_PIN_INCORRECT. Every C_Login is
 * logged (a line "C_Login LENGTH RV", RV in hex) to the file PIN_LENGTH_LOG (named at build
 * time), so the test knows which PIN reached C_Login and what it was answered.
 */
#include <dlfcn.h>
#include <stdio.h>

#include <p11-kit/pkcs11.h>

static CK_FUNCTION_LIST wrapped;
static CK_RV (*softhsm_login)(CK_SESSION_HANDLE, CK_USER_TYPE, CK_UTF8CHAR_PTR, CK_ULONG);

static CK_RV login(CK_SESSION_HANDLE session, CK_USER_TYPE user, CK_UTF8CHAR_PTR pin, CK_ULONG length) {
    CK_SESSION_INFO s;
    CK_TOKEN_INFO t;
    CK_RV rv = wrapped.C_GetSessionInfo(session, &s);
    if (rv == CKR_OK) rv = wrapped.C_GetTokenInfo(s.slotID, &t);
    if (rv == CKR_OK) rv = length < t.ulMinPinLen || length > t.ulMaxPinLen ? CKR_PIN_LEN_RANGE : softhsm_login(session, user, pin, length);
    FILE *log = fopen(PIN_LENGTH_LOG, "a");
    if (log != NULL) {
        fprintf(log, "C_Login %lu 0x%lx\n", (unsigned long)length, (unsigned long)rv);
        fclose(log);
    }
    return rv;
}

CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR list) {
    if (softhsm_login == NULL) {
        void *handle = dlopen(SOFTHSM_MODULE, RTLD_NOW | RTLD_LOCAL);
        CK_C_GetFunctionList get = handle != NULL ? (CK_C_GetFunctionList)dlsym(handle, "C_GetFunctionList") : NULL;
        CK_FUNCTION_LIST_PTR real = NULL;
        if (get == NULL || get(&real) != CKR_OK || real == NULL) return CKR_GENERAL_ERROR;
        wrapped = *real;
        softhsm_login = real->C_Login;
        wrapped.C_Login = login;
    }
    *list = &wrapped;
    return CKR_OK;
}

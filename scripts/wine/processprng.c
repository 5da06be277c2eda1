/*
 * A stand-in for Windows' bcryptprimitives.dll, for running the Windows
 * test binaries under Wine 8.
 *
 * Rust's standard library gets its random bytes from ProcessPrng in
 * bcryptprimitives.dll, which Wine 8 does not provide. This DLL exports
 * ProcessPrng and answers it from BCryptGenRandom, which Wine has.
 * It is built by scripts/test-windows.sh and never shipped.
 */
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}

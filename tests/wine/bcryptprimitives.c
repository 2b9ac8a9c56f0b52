/*
 * Test-side stand-in for bcryptprimitives.dll under Wine 8, which has none: Rust's standard
 * library on Windows 10 and later imports ProcessPrng from it for its random seeds
 * (HashMap keys). Built by tests/wine.rs with mingw-w64 next to a copy of the harness in a
 * temporary directory; never part of the driver package.
 *
 * ProcessPrng fills the buffer with random bytes and always returns TRUE
 * (https://learn.microsoft.com/windows/win32/seccng/processprng). The bytes come from
 * RtlGenRandom (advapi32 SystemFunction036), which Wine has.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}

// Include in the main.cpp (one file only) of a program whose sandbox has no /proc.
// A sanitizer build only: the sanitizer runtime reads ASAN_OPTIONS from
// /proc/self/environ, and LeakSanitizer needs /proc at exit, so neither the "no leak
// checks in a sandbox" that pined passes (common/sanitizer_env.h) nor the leak check
// itself can work there. This sets that default in the program instead.
#pragma once

#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1
#endif
#endif

#ifdef __SANITIZE_ADDRESS__
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif

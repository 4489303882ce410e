/**
 * @file kdc/export.h
 * @brief KDC_EXPORT: the only way a libkdc symbol becomes visible.
 *
 * libkdc is built with -fvisibility=hidden (CMake C_VISIBILITY_PRESET
 * hidden); a function is part of the ABI only if its declaration carries
 * KDC_EXPORT. KDC_BUILDING is defined only while libkdc itself compiles.
 */
#ifndef KDC_EXPORT_H
#define KDC_EXPORT_H

#if defined(_WIN32) || defined(__CYGWIN__)
#  if defined(KDC_BUILDING)
#    define KDC_EXPORT __declspec(dllexport)
#  else
#    define KDC_EXPORT __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define KDC_EXPORT __attribute__((visibility("default")))
#else
#  define KDC_EXPORT
#endif

#endif /* KDC_EXPORT_H */

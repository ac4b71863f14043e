/* SPDX-License-Identifier: MIT */
/*
 * treercu/version.h: the version of these headers, the one place it is
 * written (CMake reads it for the project's version; trcu_version() is the
 * linked library's).
 */
#ifndef TREERCU_VERSION_H
#define TREERCU_VERSION_H

#define TREERCU_VERSION_MAJOR 0
#define TREERCU_VERSION_MINOR 1
#define TREERCU_VERSION_PATCH 0
#define TREERCU_VERSION_STRING "0.1.0"

#endif /* TREERCU_VERSION_H */

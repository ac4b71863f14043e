# liburcu's API on treercu: headers (installed under include/treercu/urcu/),
# libtreercu-urcu (the out-of-line part, treercu's public API only) and the
# pkg-config module treercu-urcu.  Included from the top-level CMakeLists.txt.

set(TRCU_URCU_DIR ${CMAKE_CURRENT_LIST_DIR})
include(GNUInstallDirs)

# The compat headers come first on the include path so that <urcu.h>,
# <urcu/urcu-memb.h>, ... are treercu's; liburcu's other headers (uatomic,
# lists, rculfhash) are found after them, in the system directories.
function(trcu_urcu_library name kind core)
  add_library(${name} ${kind} ${TRCU_URCU_DIR}/src/urcu_compat.c)
  target_include_directories(${name} BEFORE PUBLIC
    $<BUILD_INTERFACE:${TRCU_URCU_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/treercu/urcu>)
  target_link_libraries(${name} PUBLIC ${core})
  set_target_properties(${name} PROPERTIES
    OUTPUT_NAME treercu-urcu
    POSITION_INDEPENDENT_CODE ON)
endfunction()

# Static and shared like libtreercu where both are built, each on its own
# libtreercu; otherwise one library following BUILD_SHARED_LIBS.
if(TARGET treercu_static AND TARGET treercu_shared)
  trcu_urcu_library(treercu-urcu_static STATIC treercu_static)
  trcu_urcu_library(treercu-urcu_shared SHARED treercu_shared)
  set_target_properties(treercu-urcu_shared PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR})
  set(TRCU_URCU_TARGETS treercu-urcu_static treercu-urcu_shared)
  if(BUILD_SHARED_LIBS)
    add_library(treercu-urcu ALIAS treercu-urcu_shared)
  else()
    add_library(treercu-urcu ALIAS treercu-urcu_static)
  endif()
else()
  trcu_urcu_library(treercu-urcu "" treercu)
  set(TRCU_URCU_TARGETS treercu-urcu)
endif()

# treercu-urcu.pc: on top of treercu.pc (Requires) where the build writes
# one, with its directories; otherwise on its own with absolute paths.
if(DEFINED TREERCU_PC_PREFIX)
  set(TRCU_URCU_PC_PREFIX "${TREERCU_PC_PREFIX}")
  set(TRCU_URCU_PC_LIBDIR "${TREERCU_PC_LIBDIR}")
  set(TRCU_URCU_PC_INCLUDEDIR "${TREERCU_PC_INCLUDEDIR}")
  set(TRCU_URCU_PC_REQUIRES "Requires: treercu")
  set(TRCU_URCU_PC_CORE_CFLAGS "")
  set(TRCU_URCU_PC_CORE_LIBS "")
else()
  set(TRCU_URCU_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(TRCU_URCU_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(TRCU_URCU_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
  set(TRCU_URCU_PC_REQUIRES "")
  set(TRCU_URCU_PC_CORE_CFLAGS " -I\${includedir}")
  set(TRCU_URCU_PC_CORE_LIBS " -ltreercu -pthread")
endif()

if(NOT DEFINED TREERCU_INSTALL OR TREERCU_INSTALL)
  install(TARGETS ${TRCU_URCU_TARGETS}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${TRCU_URCU_DIR}/include/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/treercu/urcu)
  configure_file(${TRCU_URCU_DIR}/treercu-urcu.pc.in
    ${PROJECT_BINARY_DIR}/treercu-urcu.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/treercu-urcu.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

# The two-way test: tests/api/urcu_api.c is written against liburcu's API and is
# built against treercu's compat headers and, when liburcu is installed,
# against liburcu itself, changing only the include path and libraries (what
# `pkg-config treercu-urcu` vs `pkg-config liburcu` give), once per flavor.
# rculfhash and lfqueue come from liburcu-cds both ways.
# (Only with the tests: a consumer's build must not look for liburcu.)
if(DEFINED TREERCU_BUILD_TESTS AND NOT TREERCU_BUILD_TESTS)
  return()
endif()
# A test written against liburcu's API, built against treercu's: target
# treercu_NAME linked to treercu-urcu (and ARGN), test NAME, run with the
# compat layer's suppressions in the TSan build.
function(trcu_urcu_test name src)
  set(t treercu_${name})
  add_executable(${t} ${src})
  target_link_libraries(${t} PRIVATE treercu-urcu ${ARGN})
  add_test(NAME ${name} COMMAND ${t})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300)
  if(TREERCU_SANITIZE STREQUAL "thread")
    set_tests_properties(${name} PROPERTIES ENVIRONMENT
      "TSAN_OPTIONS=halt_on_error=1 second_deadlock_stack=1 suppressions=${TRCU_URCU_DIR}/tsan.supp")
  endif()
endfunction()

find_library(TRCU_URCU_CDS urcu-cds)
find_package(PkgConfig QUIET)
if(TRCU_URCU_CDS AND PKG_CONFIG_FOUND)
  pkg_check_modules(TRCU_LIBURCU_MEMB QUIET IMPORTED_TARGET liburcu)
  pkg_check_modules(TRCU_LIBURCU_QSBR QUIET IMPORTED_TARGET liburcu-qsbr)
  pkg_check_modules(TRCU_LIBURCU_BP QUIET IMPORTED_TARGET liburcu-bp)
  foreach(flavor memb qsbr bp)
    string(TOUPPER ${flavor} FLAVOR)
    set(t treercu_test_urcu_api_${flavor})
    trcu_urcu_test(test_urcu_api_${flavor} ${PROJECT_SOURCE_DIR}/tests/api/urcu_api.c
                   ${TRCU_URCU_CDS})
    target_compile_definitions(${t} PRIVATE URCU_API_TEST_${FLAVOR})
    if(TREERCU_SANITIZE STREQUAL "thread")
      # ThreadSanitizer cannot start threads in the child of a
      # multi-threaded fork(); that step is left to the other builds.
      target_compile_definitions(${t} PRIVATE URCU_API_TEST_NO_FORK)
    endif()
    # liburcu is not built with the sanitizers: its side runs in the
    # normal build.
    if(TRCU_LIBURCU_${FLAVOR}_FOUND AND TREERCU_SANITIZE STREQUAL "")
      set(t treercu_test_urcu_api_${flavor}_on_liburcu)
      add_executable(${t} ${PROJECT_SOURCE_DIR}/tests/api/urcu_api.c)
      target_compile_definitions(${t} PRIVATE URCU_API_TEST_${FLAVOR})
      target_link_libraries(${t} PRIVATE PkgConfig::TRCU_LIBURCU_${FLAVOR} ${TRCU_URCU_CDS})
      add_test(NAME test_urcu_api_${flavor}_on_liburcu COMMAND ${t})
      set_tests_properties(test_urcu_api_${flavor}_on_liburcu PROPERTIES TIMEOUT 300)
    endif()
  endforeach()
else()
  message(STATUS "liburcu-cds or pkg-config not found: the liburcu API tests are not built")
endif()

# A test written against liburcu's API, built against liburcu (the
# pkg-config target of FLAVOR) as NAME_on_liburcu, when liburcu is installed
# and the build has no sanitizer (liburcu is not built with them).
function(trcu_urcu_test_on_liburcu name src FLAVOR)
  if(TRCU_LIBURCU_${FLAVOR}_FOUND AND TREERCU_SANITIZE STREQUAL "")
    set(t treercu_${name}_on_liburcu)
    add_executable(${t} ${src})
    target_link_libraries(${t} PRIVATE PkgConfig::TRCU_LIBURCU_${FLAVOR})
    add_test(NAME ${name}_on_liburcu COMMAND ${t})
    set_tests_properties(${name}_on_liburcu PROPERTIES TIMEOUT 300)
  endif()
endfunction()

# An online QSBR thread's call_rcu() is no quiescent state, however many
# callbacks it queues (tests/api/urcu_qsbr_call_rcu_flood.c, liburcu's API
# only): against treercu's headers and, when liburcu is installed, against
# liburcu.
trcu_urcu_test(test_urcu_qsbr_call_rcu_flood
               ${PROJECT_SOURCE_DIR}/tests/api/urcu_qsbr_call_rcu_flood.c)
trcu_urcu_test_on_liburcu(test_urcu_qsbr_call_rcu_flood
                          ${PROJECT_SOURCE_DIR}/tests/api/urcu_qsbr_call_rcu_flood.c QSBR)
# defer_rcu(): every call runs once, a lone one by itself, none before the
# readers that began before it (tests/api/urcu_defer_runs_every_call.c,
# liburcu's API only), both ways.
trcu_urcu_test(test_urcu_defer_runs_every_call
               ${PROJECT_SOURCE_DIR}/tests/api/urcu_defer_runs_every_call.c)
if(TREERCU_SANITIZE STREQUAL "thread")   # no threads in a fork child under TSan
  target_compile_definitions(treercu_test_urcu_defer_runs_every_call PRIVATE URCU_API_TEST_NO_FORK)
endif()
trcu_urcu_test_on_liburcu(test_urcu_defer_runs_every_call
                          ${PROJECT_SOURCE_DIR}/tests/api/urcu_defer_runs_every_call.c MEMB)
# free_all_cpu_call_rcu_data() out of memory does its job one CPU at a
# time (tests/api/urcu_free_all_cpu_enomem.c wraps calloc()).
trcu_urcu_test(test_urcu_free_all_cpu_enomem
               ${PROJECT_SOURCE_DIR}/tests/api/urcu_free_all_cpu_enomem.c)
target_link_options(treercu_test_urcu_free_all_cpu_enomem PRIVATE -Wl,--wrap=calloc)

# liburcu's API on treercu: headers (installed under include/treercu/urcu/),
# libtreercu-urcu (the out-of-line part, treercu's public API only) and the
# pkg-config module treercu-urcu.  Included from the top-level CMakeLists.txt.

set(TRCU_URCU_DIR ${CMAKE_CURRENT_LIST_DIR})

add_library(treercu-urcu ${TRCU_URCU_DIR}/src/urcu_compat.c)
# The compat headers come first so that <urcu.h>, <urcu/urcu-memb.h>, ...
# are treercu's; liburcu's other headers (uatomic, lists, rculfhash) are
# found after them, in the system directories.
target_include_directories(treercu-urcu BEFORE PUBLIC
  $<BUILD_INTERFACE:${TRCU_URCU_DIR}/include>
  $<INSTALL_INTERFACE:include/treercu/urcu>)
target_link_libraries(treercu-urcu PUBLIC treercu)
set_target_properties(treercu-urcu PROPERTIES POSITION_INDEPENDENT_CODE ON)

include(GNUInstallDirs)
install(TARGETS treercu-urcu
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${TRCU_URCU_DIR}/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/treercu/urcu)
configure_file(${TRCU_URCU_DIR}/treercu-urcu.pc.in
  ${CMAKE_CURRENT_BINARY_DIR}/treercu-urcu.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/treercu-urcu.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The two-way test: tests/urcu_api.c is written against liburcu's API and is
# built against treercu's compat headers and, when liburcu is installed,
# against liburcu itself, changing only the include path and libraries (what
# `pkg-config treercu-urcu` vs `pkg-config liburcu` give), once per flavor.
# rculfhash and lfqueue come from liburcu-cds both ways.
find_library(TRCU_URCU_CDS urcu-cds)
find_package(PkgConfig QUIET)
if(TRCU_URCU_CDS AND PKG_CONFIG_FOUND)
  pkg_check_modules(TRCU_LIBURCU_MEMB QUIET IMPORTED_TARGET liburcu)
  pkg_check_modules(TRCU_LIBURCU_QSBR QUIET IMPORTED_TARGET liburcu-qsbr)
  pkg_check_modules(TRCU_LIBURCU_BP QUIET IMPORTED_TARGET liburcu-bp)
  foreach(flavor memb qsbr bp)
    string(TOUPPER ${flavor} FLAVOR)
    set(t treercu_test_urcu_api_${flavor})
    add_executable(${t} ${PROJECT_SOURCE_DIR}/tests/urcu_api.c)
    target_compile_definitions(${t} PRIVATE URCU_API_TEST_${FLAVOR})
    if(TREERCU_SANITIZE STREQUAL "thread")
      # ThreadSanitizer cannot start threads in the child of a
      # multi-threaded fork(); that step is left to the other builds.
      target_compile_definitions(${t} PRIVATE URCU_API_TEST_NO_FORK)
    endif()
    target_link_libraries(${t} PRIVATE treercu-urcu ${TRCU_URCU_CDS})
    add_test(NAME test_urcu_api_${flavor} COMMAND ${t})
    set_tests_properties(test_urcu_api_${flavor} PROPERTIES TIMEOUT 300)
    if(TREERCU_SANITIZE STREQUAL "thread")
      set_tests_properties(test_urcu_api_${flavor} PROPERTIES ENVIRONMENT
        "TSAN_OPTIONS=halt_on_error=1 second_deadlock_stack=1 suppressions=${TRCU_URCU_DIR}/tsan.supp")
    endif()
    # liburcu is not built with the sanitizers: its side runs in the
    # normal build.
    if(TRCU_LIBURCU_${FLAVOR}_FOUND AND TREERCU_SANITIZE STREQUAL "")
      set(t treercu_test_urcu_api_${flavor}_on_liburcu)
      add_executable(${t} ${PROJECT_SOURCE_DIR}/tests/urcu_api.c)
      target_compile_definitions(${t} PRIVATE URCU_API_TEST_${FLAVOR})
      target_link_libraries(${t} PRIVATE PkgConfig::TRCU_LIBURCU_${FLAVOR} ${TRCU_URCU_CDS})
      add_test(NAME test_urcu_api_${flavor}_on_liburcu COMMAND ${t})
      set_tests_properties(test_urcu_api_${flavor}_on_liburcu PROPERTIES TIMEOUT 300)
    endif()
  endforeach()
else()
  message(STATUS "liburcu-cds not found: the liburcu API tests are not built")
endif()

# The treercu tool's extras, included after its target is defined: the
# option parser, zlib for the plots (a tool-only dependency), and the
# version and commit every output records.
target_sources(treercu-tool PRIVATE ${CMAKE_CURRENT_LIST_DIR}/options.c)
find_package(ZLIB REQUIRED)   # Debian: zlib1g-dev (scripts/deps.sh)
target_link_libraries(treercu-tool PRIVATE ZLIB::ZLIB)
set(TREERCU_TOOL_COMMIT "")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE TREERCU_TOOL_COMMIT
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
target_compile_definitions(treercu-tool PRIVATE
  TREERCU_TOOL_VERSION="${PROJECT_VERSION}"
  TREERCU_TOOL_COMMIT="${TREERCU_TOOL_COMMIT}")

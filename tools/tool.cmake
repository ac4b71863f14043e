# The treercu tool's sources and extras, included after its target is
# defined.  The sources by purpose:
#   common/       helpers every subcommand uses: option tables and parsing,
#                 time, statistics, tables, JSON, progress, PNG plots, the
#                 fiber runtime of the task-reader tools
#   bench/        benchmarks beside liburcu (refscale, scale, callbacks, wq),
#                 the peers they compare (peers.h: treercu, liburcu's
#                 flavors, ck_epoch) with their workloads (peers), and the
#                 quick summary with its goals (bench/goals.tsv)
#   experiments/  reproductions of one kernel patch each, named after the
#                 mechanism it changes
#   torture/      the rcutorture pipeline
# zlib for the plots is a tool-only dependency; every output records the
# version and commit.
set(d ${CMAKE_CURRENT_LIST_DIR})
target_sources(treercu-tool PRIVATE
  ${d}/common/options.c
  ${d}/common/stats.c
  ${d}/common/table.c
  ${d}/common/json.c
  ${d}/common/run.c
  ${d}/common/plot.c
  ${d}/common/fiber.c
  ${d}/bench/liburcu_glue.c
  ${d}/bench/refscale.c
  ${d}/bench/scale.c
  ${d}/bench/callbacks.c
  ${d}/bench/wq.c
  ${d}/bench/quick.c
  ${d}/bench/goals.c
  ${d}/experiments/early_report.c
  ${d}/experiments/wake_after_unlock.c
  ${d}/experiments/sync_paths.c
  ${d}/experiments/wake_from_gp_latency.c
  ${d}/experiments/wake_from_gp_plot.c
  ${d}/experiments/wake_from_gp_callbacks.c
  ${d}/experiments/blocked_task_lists.c
  ${d}/torture/torture.c
  ${d}/torture/pipeline.c
  ${d}/torture/callbacks.c
  ${d}/torture/inject.c
  ${d}/torture/tasks.c
)
target_include_directories(treercu-tool PRIVATE ${d}/common ${d}/bench ${d}/experiments ${d}/torture
                           ${CMAKE_CURRENT_BINARY_DIR}/tools)
# Task readers' internal statistics and test switches (src/task.h).
target_include_directories(treercu-tool PRIVATE ${PROJECT_SOURCE_DIR}/src)
# The goals (bench/goals.tsv) become a C string in tool_goals.h; editing the
# file reconfigures, and file(CONFIGURE) rewrites the header only when the
# text changed.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${d}/bench/goals.tsv)
file(READ ${d}/bench/goals.tsv goals_text)
string(REPLACE "\\" "\\\\" goals_text "${goals_text}")
string(REPLACE "\"" "\\\"" goals_text "${goals_text}")
string(REPLACE "\t" "\\t" goals_text "${goals_text}")
string(REPLACE "\n" "\\n\"\n\t\"" goals_text "${goals_text}")
file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/tools/tool_goals.h
     CONTENT "/* Generated from tools/bench/goals.tsv by tools/tool.cmake. */\nstatic const char tool_goals_tsv[] =\n\t\"@goals_text@\";\n"
     @ONLY)
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

# The peers every benchmark compares (bench/peers.h): liburcu's mb and bp
# flavors beside memb and qsbr (all in liburcu-dev), and Concurrency Kit's
# ck_epoch when it is found (Debian: libck-dev).  Without it the tool still
# builds and says "peer ck_epoch not available" where it would have run;
# TREERCU_TOOL_CK=OFF leaves it out on purpose.
option(TREERCU_TOOL_CK "Compare with Concurrency Kit's ck_epoch when it is found" ON)
target_sources(treercu-tool PRIVATE
  ${d}/bench/peers.c
  ${d}/bench/peer_treercu.c
  ${d}/bench/peer_lu_memb.c
  ${d}/bench/peer_lu_mb.c
  ${d}/bench/peer_lu_bp.c
  ${d}/bench/peer_lu_qsbr.c
  ${d}/bench/peer_ck.c
  ${d}/bench/peers_retire.c
  ${d}/bench/peers_hashmap.c
  ${d}/bench/peers_workloads.c)
# liburcu bp's reader registry hands out readers aligned less than its
# struct declares (128 bytes); its inlined read side trips UBSan's alignment
# check in the sanitizer builds.  The misalignment is liburcu's and harmless
# on the targets (no instruction needs it), so that one check is off there.
set_source_files_properties(${d}/bench/peer_lu_bp.c PROPERTIES
  COMPILE_OPTIONS -fno-sanitize=alignment)
# Every peer's measured loops (the busy readers and refscale's loops,
# peers.h) start on a 64-byte boundary: a loop of a few instructions that
# straddles one ran at about a third of the speed on the AMD EPYC VM of
# docs/decisions.md, so one peer's busy readers completed a third of
# another's sections per second (and reached a QSBR quiescent state three
# times less often) for the placement of its code alone.
include(CheckCCompilerFlag)
check_c_compiler_flag(-falign-loops=64 TREERCU_TOOL_ALIGN_LOOPS)
if(TREERCU_TOOL_ALIGN_LOOPS)
  set_property(SOURCE ${d}/bench/peer_treercu.c ${d}/bench/peer_lu_memb.c
               ${d}/bench/peer_lu_mb.c ${d}/bench/peer_lu_bp.c ${d}/bench/peer_lu_qsbr.c
               ${d}/bench/peer_ck.c ${d}/bench/refscale.c
               APPEND PROPERTY COMPILE_OPTIONS -falign-loops=64)
endif()
find_library(URCU_MB urcu-mb)
find_library(URCU_BP urcu-bp)
if(NOT URCU_MB OR NOT URCU_BP)
  message(FATAL_ERROR "liburcu's mb and bp flavors not found (Debian: liburcu-dev)")
endif()
target_link_libraries(treercu-tool PRIVATE ${URCU_MB} ${URCU_BP})
if(TREERCU_TOOL_CK)
  find_path(CK_INCLUDE_DIR ck_epoch.h)
  find_library(CK_LIBRARY ck)
endif()
if(TREERCU_TOOL_CK AND CK_INCLUDE_DIR AND CK_LIBRARY)
  target_include_directories(treercu-tool PRIVATE ${CK_INCLUDE_DIR})
  target_link_libraries(treercu-tool PRIVATE ${CK_LIBRARY})
  target_compile_definitions(treercu-tool PRIVATE TREERCU_TOOL_HAVE_CK=1)
else()
  message(STATUS "treercu tool: Concurrency Kit not used (Debian: libck-dev): "
                 "the ck_epoch peer is not available")
endif()

# The API reference builds without warnings on the public headers: runs doxygen on docs/Doxyfile
# (from SOURCE_DIR, as `doxygen docs/Doxyfile` is run by hand) with its output and warning log
# redirected into WORK, fails if doxygen fails or any warning names a file under include/, and
# lists the other warnings (the Markdown pages') without failing. Skipped (SKIP_REGULAR_EXPRESSION)
# where doxygen is not installed.
#   cmake -DSOURCE_DIR=<repository root> -DWORK=<build folder> [-DDOXYGEN=<doxygen>] -P doxygen_check.cmake
cmake_policy(VERSION 3.16)
find_program(DOXYGEN doxygen)
if(NOT DOXYGEN)
  message("doxygen_public_headers: skipped: doxygen not found")
  return()
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
# docs/Doxyfile unchanged, but for where the output and the warnings go and their format.
file(WRITE "${WORK}/Doxyfile"
  "@INCLUDE = ${SOURCE_DIR}/docs/Doxyfile\n"
  "OUTPUT_DIRECTORY = \"${WORK}/doxygen\"\n"
  "WARN_LOGFILE = \"${WORK}/warnings.txt\"\n"
  "WARN_FORMAT = \"$file:$line: $text\"\n")
execute_process(COMMAND "${DOXYGEN}" "${WORK}/Doxyfile" WORKING_DIRECTORY "${SOURCE_DIR}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen exited with status '${rc}':\n${out}${err}")
endif()

set(log "")
if(EXISTS "${WORK}/warnings.txt")
  file(READ "${WORK}/warnings.txt" log)
endif()
# One entry per warning: a line "<file>:<line>: warning: ..." and its indented continuation lines
# (e.g. the list of undocumented parameters). The file is absolute; compare it with both the given
# and the resolved repository root. ';', '[' and ']' would break the split into a CMake list: they
# travel as placeholders and are put back in the messages.
get_filename_component(real_root "${SOURCE_DIR}" REALPATH)
string(REPLACE ";" "<rlk-semicolon>" log "${log}")
string(REPLACE "[" "<rlk-lbracket>" log "${log}")
string(REPLACE "]" "<rlk-rbracket>" log "${log}")
string(REPLACE "\n" ";" lines "${log}")
set(header_text "")
set(page_text "")
set(n_header 0)
set(n_page 0)
set(current "")
foreach(line IN LISTS lines)
  if(line MATCHES "^[ \t]" AND current)
    string(APPEND entry "\n${line}")
    continue()
  endif()
  if(current STREQUAL "header")
    string(APPEND header_text "${entry}\n")
  elseif(current STREQUAL "page")
    string(APPEND page_text "${entry}\n")
  endif()
  set(current "")
  if(line STREQUAL "")
    continue()
  endif()
  set(entry "${line}")
  set(current "page")
  if(line MATCHES "^([^:]+):[0-9]+: ")
    set(file "${CMAKE_MATCH_1}")
    string(FIND "${file}" "${SOURCE_DIR}/include/" at_source)
    string(FIND "${file}" "${real_root}/include/" at_real)
    if(at_source EQUAL 0 OR at_real EQUAL 0)
      set(current "header")
    endif()
  endif()
  if(current STREQUAL "header")
    math(EXPR n_header "${n_header} + 1")
  else()
    math(EXPR n_page "${n_page} + 1")
  endif()
endforeach()
if(current STREQUAL "header")
  string(APPEND header_text "${entry}\n")
elseif(current STREQUAL "page")
  string(APPEND page_text "${entry}\n")
endif()

foreach(text header_text page_text)
  string(REPLACE "<rlk-semicolon>" ";" ${text} "${${text}}")
  string(REPLACE "<rlk-lbracket>" "[" ${text} "${${text}}")
  string(REPLACE "<rlk-rbracket>" "]" ${text} "${${text}}")
endforeach()
if(n_page GREATER 0)
  message("doxygen: ${n_page} warning(s) outside include/ (reported, not failing):\n${page_text}")
endif()
if(n_header GREATER 0)
  message("doxygen: ${n_header} warning(s) in the public headers (include/):\n${header_text}")
  message(FATAL_ERROR "doxygen: ${n_header} warning(s) in the public headers, listed above (reproduce: "
    "doxygen docs/Doxyfile from the repository root; full log: ${WORK}/warnings.txt)")
endif()
message(STATUS "doxygen: no warnings in the public headers; HTML in ${WORK}/doxygen/html/index.html")

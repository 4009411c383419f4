# Runs a command and checks both its exit status and its output (CTest's PASS_REGULAR_EXPRESSION
# alone ignores the exit status, so a run that printed the right line and then crashed would pass).
#
#   cmake -DEXPECT=<regex> [-DEXPECT_FAILURE=ON] -P run_and_match.cmake -- <command> [args...]
#
# EXPECT is matched against stdout and stderr together, as PASS_REGULAR_EXPRESSION does (the same
# regex engine). The command must exit with status 0, or, with EXPECT_FAILURE, with a non-zero
# status (a rejected option); a signal counts as neither. No argument may contain a semicolon
# (CMake's list separator).
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED EXPECT)
  message(FATAL_ERROR "run_and_match.cmake: pass -DEXPECT=<regex>")
endif()
# The command is everything after `--` (which CMake leaves unparsed).
set(command "")
set(in_command FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 1 ${last})
  if(in_command)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(in_command TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "run_and_match.cmake: no command given after --")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output
  ECHO_OUTPUT_VARIABLE ECHO_ERROR_VARIABLE)

set(problems "")
if(EXPECT_FAILURE)
  # A non-zero exit status is a number; a crash is reported as text ("Segmentation fault", ...).
  if(status STREQUAL "0" OR NOT status MATCHES "^[0-9]+$")
    string(APPEND problems "expected a non-zero exit status, got '${status}'\n")
  endif()
elseif(NOT status STREQUAL "0")
  string(APPEND problems "expected exit status 0, got '${status}'\n")
endif()
if(NOT output MATCHES "${EXPECT}")
  string(APPEND problems "the output does not match the regular expression '${EXPECT}'\n")
endif()
if(problems)
  list(JOIN command " " shown)
  message(FATAL_ERROR "run_and_match.cmake: ${shown}:\n${problems}")
endif()

# The library never writes the process environment: no header under include/rlkernels calls
# setenv, unsetenv, putenv or clearenv. Another thread of a program may call getenv at any time
# (NCCL, CUDA, OpenMP and the C library do), and getenv races with a write (POSIX). The earlier
# nccl_communicator set NCCL_COMM_ID for its start-up (issue 55); it now hands NCCL's unique id
# over without the environment (distributed/rendezvous.hpp). Run as
#   cmake -DINCLUDE_DIR=<repo>/include -P environment_untouched.cmake
if(NOT INCLUDE_DIR)
  message(FATAL_ERROR "set -DINCLUDE_DIR=<the repository's include directory>")
endif()
file(GLOB_RECURSE headers "${INCLUDE_DIR}/rlkernels/*.hpp" "${INCLUDE_DIR}/rlkernels/*.cuh")
list(LENGTH headers count)
if(count LESS 50)
  message(FATAL_ERROR "found only ${count} headers under ${INCLUDE_DIR}/rlkernels")
endif()
set(found "")
foreach(header IN LISTS headers)
  file(STRINGS "${header}" lines REGEX "(^|[^A-Za-z0-9_])(setenv|unsetenv|putenv|clearenv)[ \t]*\\(")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line MATCHES "^//")
      continue()  # a comment
    endif()
    file(RELATIVE_PATH name "${INCLUDE_DIR}" "${header}")
    string(APPEND found "\n  ${name}: ${line}")
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "the library writes the process environment (races with getenv on other threads):${found}")
endif()
message(STATUS "${count} headers, none writes the environment")

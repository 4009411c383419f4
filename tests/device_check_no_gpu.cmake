# `scripts/device_check.sh run` (the entry point of scripts/device_check.py) on a machine without a
# GPU: it must say so, exit with status 3 and still write OUT/summary.json with status "no_gpu".
# Runs SCRIPT against a fake bundle (a manifest only: nothing of it runs without a GPU) in WORK.
# Skipped (SKIP_REGULAR_EXPRESSION) where nvidia-smi lists a GPU: there the script would run the
# real stages.
find_program(NVIDIA_SMI nvidia-smi)
if(NVIDIA_SMI)
  execute_process(COMMAND "${NVIDIA_SMI}" -L RESULT_VARIABLE smi_rc OUTPUT_VARIABLE smi_out ERROR_QUIET)
  if(smi_rc EQUAL 0 AND smi_out MATCHES "GPU [0-9]")
    message("device_check_no_gpu: skipped: this machine has a GPU")
    return()
  endif()
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/bundle/tests")
file(WRITE "${WORK}/bundle/manifest.json" "{\"what\": \"a fake bundle for the CTest test device_check_no_gpu\"}\n")
execute_process(COMMAND bash "${SCRIPT}" run "${WORK}/bundle" "${WORK}/out"
  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 3)
  message(FATAL_ERROR "device_check run exited with status '${rc}', not 3 (no GPU)")
endif()
if(NOT "${out}" MATCHES "no GPU: ")
  message(FATAL_ERROR "device_check run did not say 'no GPU: <why>'")
endif()
if(NOT EXISTS "${WORK}/out/summary.json")
  message(FATAL_ERROR "device_check run wrote no ${WORK}/out/summary.json")
endif()
file(READ "${WORK}/out/summary.json" summary)
string(JSON status ERROR_VARIABLE json_error GET "${summary}" status)
if(json_error OR NOT status STREQUAL "no_gpu")
  message(FATAL_ERROR "summary.json's status is '${status}' (${json_error}), not no_gpu:\n${summary}")
endif()
string(JSON stage ERROR_VARIABLE json_error GET "${summary}" stages 0 status)
if(json_error OR NOT stage STREQUAL "no_gpu")
  message(FATAL_ERROR "summary.json's first stage is not the GPU probe with status no_gpu:\n${summary}")
endif()
message(STATUS "device_check run: no GPU, exit status 3, summary.json says no_gpu")

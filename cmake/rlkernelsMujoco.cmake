# MuJoCo's C library from the PyPI wheel `mujoco` (3.x ships libmujoco.so.<version> and its headers
# inside the Python package), for the tests and benchmarks that compare rlkernels' physics with
# MuJoCo itself. Optional: the library never needs it. Project-internal (not installed).
#
#   RLK_MUJOCO_DIR   the mujoco package's directory (found through python3 when empty)
#   RLK_GYMNASIUM_DIR the gymnasium package's directory (its envs/mujoco/assets/*.xml are the models)
# Defines the imported target rlk_mujoco and RLK_HAVE_MUJOCO=ON when found, and RLK_MUJOCO_VERSION.
set(RLK_MUJOCO_DIR "" CACHE PATH "The mujoco Python package's directory (libmujoco.so.* and include/); found through python3 when empty")
set(RLK_GYMNASIUM_DIR "" CACHE PATH "The gymnasium Python package's directory; found through python3 when empty")
set(RLK_HAVE_MUJOCO OFF)
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT RLK_MUJOCO_DIR AND Python3_Interpreter_FOUND)
  execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import mujoco, os; print(os.path.dirname(mujoco.__file__))"
    OUTPUT_VARIABLE _rlk_mujoco_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rlk_rc)
  if(_rlk_rc EQUAL 0)
    set(RLK_MUJOCO_DIR "${_rlk_mujoco_dir}")
  endif()
endif()
if(NOT RLK_GYMNASIUM_DIR AND Python3_Interpreter_FOUND)
  execute_process(COMMAND "${Python3_EXECUTABLE}" -c "import gymnasium, os; print(os.path.dirname(gymnasium.__file__))"
    OUTPUT_VARIABLE _rlk_gym_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rlk_rc)
  if(_rlk_rc EQUAL 0)
    set(RLK_GYMNASIUM_DIR "${_rlk_gym_dir}")
  endif()
endif()
if(RLK_MUJOCO_DIR)
  file(GLOB _rlk_mujoco_libs "${RLK_MUJOCO_DIR}/libmujoco.so.*")
  list(SORT _rlk_mujoco_libs)
  list(LENGTH _rlk_mujoco_libs _rlk_n)
  if(_rlk_n GREATER 0 AND EXISTS "${RLK_MUJOCO_DIR}/include/mujoco/mujoco.h")
    list(GET _rlk_mujoco_libs -1 _rlk_mujoco_lib)
    string(REGEX REPLACE ".*libmujoco\\.so\\." "" RLK_MUJOCO_VERSION "${_rlk_mujoco_lib}")
    add_library(rlk_mujoco SHARED IMPORTED)
    set_target_properties(rlk_mujoco PROPERTIES
      IMPORTED_LOCATION "${_rlk_mujoco_lib}"
      INTERFACE_INCLUDE_DIRECTORIES "${RLK_MUJOCO_DIR}/include")
    set(RLK_HAVE_MUJOCO ON)
    message(STATUS "rlkernels: MuJoCo ${RLK_MUJOCO_VERSION} for the physics reference tests (${_rlk_mujoco_lib})")
  endif()
endif()
if(NOT RLK_HAVE_MUJOCO)
  message(STATUS "rlkernels: MuJoCo not found (pip install mujoco==3.12.0): the tests against MuJoCo are not built")
endif()
if(RLK_GYMNASIUM_DIR AND EXISTS "${RLK_GYMNASIUM_DIR}/envs/mujoco/assets/hopper.xml")
  set(RLK_GYMNASIUM_ASSETS "${RLK_GYMNASIUM_DIR}/envs/mujoco/assets")
else()
  set(RLK_GYMNASIUM_ASSETS "")
endif()

# mhac_add_layers: compile a .mha file in a CMake build, as add_halide_library does for Halide.
#
#   mhac_add_layers(NAME SOURCES layers.mha [SCHEDULE layers.sched] [TARGET cpu])
#
# runs `mhac compile` at build time (again when the .mha, the schedule or mhac changes) and
# gives a static library target NAME holding NAME.o, whose users get NAME.h on their include
# path and mhac's runtime on their link line:
#
#   mhac_add_layers(bert SOURCES bert.mha TARGET x86-64-v3)
#   target_link_libraries(my_program PRIVATE bert)      # then #include "bert.h"
#
# TARGET is `mhac compile --target` (default: host, the machine that builds); SCHEDULE a
# schedule file (`mhac compile --schedule`, see docs/schedules.md).
function(mhac_add_layers name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SCHEDULE;TARGET" "SOURCES")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mhac_add_layers(${name}): unexpected arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  list(LENGTH ARG_SOURCES count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "mhac_add_layers(${name}): give one .mha file in SOURCES (a file may "
                        "hold several layers); got ${count}")
  endif()
  get_filename_component(source "${ARG_SOURCES}" ABSOLUTE)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/mhac_layers/${name}")
  set(options)
  set(depends "${source}" mhac::mhac)
  if(ARG_TARGET)
    list(APPEND options "--target=${ARG_TARGET}")
  endif()
  if(ARG_SCHEDULE)
    get_filename_component(schedule "${ARG_SCHEDULE}" ABSOLUTE)
    list(APPEND options "--schedule=${schedule}")
    list(APPEND depends "${schedule}")
  endif()
  add_custom_command(
    OUTPUT "${dir}/${name}.o" "${dir}/${name}.h"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
    COMMAND mhac::mhac compile "${source}" -o "${dir}/${name}" ${options}
    DEPENDS ${depends}
    COMMENT "mhac: compiling ${ARG_SOURCES} into ${name}.o and ${name}.h"
    VERBATIM)
  set_source_files_properties("${dir}/${name}.o" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  add_library(${name} STATIC "${dir}/${name}.o" "${dir}/${name}.h")
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE C)
  target_include_directories(${name} PUBLIC "${dir}")
  target_link_libraries(${name} PUBLIC mhac::runtime m)
endfunction()

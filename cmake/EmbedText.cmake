# Writes OUTPUT, a C++ fragment with each of INPUTS (';'-separated text files) as
# {"STEM", R"mhac(TEXT)mhac"}: the default schedules and the transform libraries, compiled into
# mhac as text.
set(content "")
foreach(input IN LISTS INPUTS)
  file(READ "${input}" text)
  get_filename_component(stem "${input}" NAME_WE)
  string(APPEND content "{\"${stem}\", R\"mhac(${text})mhac\"},\n")
endforeach()
file(WRITE "${OUTPUT}" "${content}")

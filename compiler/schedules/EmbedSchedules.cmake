# Writes OUTPUT, a C++ fragment with each of INPUTS (';'-separated schedule files) as
# {"STEM", R"sched(TEXT)sched"}, for the default schedules compiled into mhac.
set(content "")
foreach(input IN LISTS INPUTS)
  file(READ "${input}" text)
  get_filename_component(stem "${input}" NAME_WE)
  string(APPEND content "{\"${stem}\", R\"sched(${text})sched\"},\n")
endforeach()
file(WRITE "${OUTPUT}" "${content}")

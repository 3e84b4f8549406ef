# cmake -DCLI=path/to/shardscope -DVERSION=X -DOUTPUT=shardscope.1 -P WriteManPage.cmake
# The man page is the CLI's own help: `shardscope --help`, then `shardscope <command> --help` for
# every command it lists, so it cannot drift from the binary (help2man's idea, without its
# dependency). Engine commands load LibTorch for their --help; the build has it.
function(run_help out)
  execute_process(COMMAND "${CLI}" ${ARGN} OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "WriteManPage: '${CLI} ${ARGN}' exited with ${rc}: ${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# roff: a backslash is \e, and a line starting with . or ' would be a request.
function(roff_literal text out)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} ".nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

run_help(usage --help)
string(REGEX MATCHALL "\n  [a-z]+ " command_lines "${usage}")
string(TIMESTAMP today "%Y-%m-%d" UTC)
roff_literal("${usage}" usage_roff)
string(CONCAT page ".TH SHARDSCOPE 1 \"${today}\" \"ShardScope ${VERSION}\" \"User Commands\"\n"
         ".SH NAME\nshardscope \\- profiler and tuning workbench for sharded (ZeRO) training\n"
         ".SH SYNOPSIS\n.B shardscope\n\\fIcommand\\fR [\\fIoptions\\fR]\n"
         ".SH DESCRIPTION\n${usage_roff}.SH COMMANDS\n")
foreach(line IN LISTS command_lines)
  string(STRIP "${line}" name)
  run_help(help ${name} --help)
  roff_literal("${help}" help_roff)
  string(APPEND page ".SS ${name}\n${help_roff}")
endforeach()
string(APPEND page ".SH ENVIRONMENT\n.TP\n.B SHARDSCOPE_LIBTORCH_DIR\n"
                   "The folder holding libtorch.so (the torch wheel's torch/lib) that train, launch, node and "
                   "allreduce load; without it, the folder the build was configured with.\n"
                   ".SH SEE ALSO\n.BR shardscope-gui (1)\n")
file(WRITE "${OUTPUT}" "${page}")

# The git hash is read at build time (not configure time) so `shardscope report` names the commit
# that was built; build_info.cpp is only rewritten when the text changes, so nothing else rebuilds.
set(SHARDSCOPE_BUILD_INFO_CPP "${CMAKE_BINARY_DIR}/generated/build_info.cpp")
add_custom_target(shardscope_build_info_gen
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
          -DOUTPUT=${SHARDSCOPE_BUILD_INFO_CPP}
          -DVERSION=${PROJECT_VERSION}
          -DCOMPILER=${CMAKE_CXX_COMPILER_ID}\ ${CMAKE_CXX_COMPILER_VERSION}
          -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
          -P ${CMAKE_CURRENT_LIST_DIR}/WriteBuildInfo.cmake
  BYPRODUCTS ${SHARDSCOPE_BUILD_INFO_CPP}
  COMMENT "Reading the git hash for build_info.cpp")

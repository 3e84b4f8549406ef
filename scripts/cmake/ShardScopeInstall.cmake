# What the main job is (scripts/run.sh builds only this), how `cmake --install` lays out a prefix,
# and the Debian package CPack makes of it. docs/build.md describes the layout.
#
#   bin/shardscope, bin/shardscope-gui            the executables (no LibTorch)
#   lib/shardscope/shardscope-engine.so           the engine module (app/cli/engine_module.hpp)
#   lib/shardscope/libcudart.so.13, libcupti...   the CUDA runtime libraries they need (CUDA builds)
#   share/shardscope/templates, demo              the config templates and the demo's config
#   share/applications, share/icons, share/man    the desktop entry, its icon, the man pages
#
# LibTorch is not in the package (the torch wheel is 3 GB): the engine commands load it from
# $SHARDSCOPE_LIBTORCH_DIR or the folder SHARDSCOPE_LIBTORCH_DIR named at configure time.
include(GNUInstallDirs)
set(SHARDSCOPE_INSTALL_MODULE_DIR "lib/shardscope")  # = kEngineModuleInstallDir in engine_module.hpp

# The man page, from the CLI's own --help texts (scripts/cmake/WriteManPage.cmake).
# Installed gzipped (gzip -9n, as Debian policy asks: no name or time stamp in the file).
set(SHARDSCOPE_MAN_PAGE "${CMAKE_BINARY_DIR}/man/shardscope.1")
set(SHARDSCOPE_GUI_MAN_PAGE "${CMAKE_BINARY_DIR}/man/shardscope-gui.1")
add_custom_command(OUTPUT "${SHARDSCOPE_MAN_PAGE}.gz" "${SHARDSCOPE_GUI_MAN_PAGE}.gz"
  COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:shardscope> -DVERSION=${PROJECT_VERSION}
          -DOUTPUT=${SHARDSCOPE_MAN_PAGE} -P ${CMAKE_CURRENT_LIST_DIR}/WriteManPage.cmake
  COMMAND gzip -9nf ${SHARDSCOPE_MAN_PAGE}
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/resources/desktop/shardscope-gui.1 > ${SHARDSCOPE_GUI_MAN_PAGE}.gz
  DEPENDS shardscope shardscope_engine_commands ${CMAKE_CURRENT_LIST_DIR}/WriteManPage.cmake
          ${PROJECT_SOURCE_DIR}/resources/desktop/shardscope-gui.1
  COMMENT "Writing the man pages from shardscope --help")
add_custom_target(shardscope_man ALL DEPENDS "${SHARDSCOPE_MAN_PAGE}.gz" "${SHARDSCOPE_GUI_MAN_PAGE}.gz")

# shardscope_main: the main job, what scripts/run.sh builds (the tests and benchmarks are the rest).
add_custom_target(shardscope_main)
add_dependencies(shardscope_main shardscope shardscope_engine_commands shardscope_man)
if(SHARDSCOPE_HAS_GUI)
  add_dependencies(shardscope_main shardscope-gui)
endif()

# shardscope_headless: what scripts/run.sh builds where no display is (the headless demo needs the
# CLI and its engine module; the GUI and the man pages wait for scripts/test.sh or a display).
add_custom_target(shardscope_headless)
add_dependencies(shardscope_headless shardscope shardscope_engine_commands)

# RUNPATHs relative to the files, so the prefix can move (a DESTDIR, a .deb unpacked anywhere).
set_target_properties(shardscope PROPERTIES INSTALL_RPATH "$ORIGIN/../${SHARDSCOPE_INSTALL_MODULE_DIR}")
set_target_properties(shardscope_engine_commands PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS shardscope RUNTIME_DEPENDENCY_SET shardscope_cuda_runtime
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS shardscope_engine_commands RUNTIME_DEPENDENCY_SET shardscope_cuda_runtime
        LIBRARY DESTINATION ${SHARDSCOPE_INSTALL_MODULE_DIR})
install(FILES "${SHARDSCOPE_MAN_PAGE}.gz" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
if(SHARDSCOPE_HAS_GUI)
  set_target_properties(shardscope-gui PROPERTIES INSTALL_RPATH "$ORIGIN/../${SHARDSCOPE_INSTALL_MODULE_DIR}")
  install(TARGETS shardscope-gui RUNTIME_DEPENDENCY_SET shardscope_cuda_runtime
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/shardscope.desktop
          DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/shardscope.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  install(FILES "${SHARDSCOPE_GUI_MAN_PAGE}.gz" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/templates/ DESTINATION ${CMAKE_INSTALL_DATADIR}/shardscope/templates
        FILES_MATCHING PATTERN "*.json")
install(FILES ${PROJECT_SOURCE_DIR}/resources/demo/ds_config.json DESTINATION ${CMAKE_INSTALL_DATADIR}/shardscope/demo)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/shardscope)

# The CUDA runtime libraries the binaries need (libcudart, libcupti) are not Debian packages: they
# go beside the module (NVIDIA lists both as redistributable). Every other library is either the
# system's (a Depends below) or LibTorch's (loaded from the configured folder).
if(SHARDSCOPE_HAS_CUDA)
  install(RUNTIME_DEPENDENCY_SET shardscope_cuda_runtime DESTINATION ${SHARDSCOPE_INSTALL_MODULE_DIR}
          PRE_INCLUDE_REGEXES "^libcudart\\.so" "^libcupti\\.so" "^libnvToolsExt\\.so"
          PRE_EXCLUDE_REGEXES ".*"
          DIRECTORIES ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/lib64)
else()
  install(RUNTIME_DEPENDENCY_SET shardscope_cuda_runtime DESTINATION ${SHARDSCOPE_INSTALL_MODULE_DIR}
          PRE_EXCLUDE_REGEXES ".*")
endif()

# The Debian package: `cpack -G DEB` in the build folder (or `cmake --build build --target package`).
# Depends are Debian 12's package names for the libraries the binaries link (the install test checks
# that every library they need is bundled, in one of these, or LibTorch's).
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "shardscope")
set(CPACK_PACKAGE_VENDOR "ShardScope")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "profiler and tuning workbench for sharded (ZeRO) training")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "ShardScope estimates memory per ZeRO stage, validates DeepSpeed configs, launches and watches\n"
    "training runs of its LibTorch engine or of DeepSpeed itself, and records and compares them as\n"
    "sessions. The engine commands (train, launch, node, allreduce) need LibTorch 2.11 (the torch\n"
    "wheel): set SHARDSCOPE_LIBTORCH_DIR to its torch/lib folder.")
string(REPLACE ";" "" CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_DEBIAN_PACKAGE_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "ShardScope developers <shardscope@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(SHARDSCOPE_DEB_DEPENDS libc6 libstdc++6 libgcc-s1 libgomp1 libsqlite3-0)
if(SHARDSCOPE_HAS_GUI)
  list(APPEND SHARDSCOPE_DEB_DEPENDS libqt6core6 libqt6gui6 libqt6widgets6 libqt6printsupport6 libqt6concurrent6
       libqcustomplot2.1-qt6)
endif()
list(JOIN SHARDSCOPE_DEB_DEPENDS ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
# ssh reaches the hosts of a hostfile; python3-venv holds the torch wheel the engine commands load.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openssh-client, python3-venv")
include(CPack)

# Installation and the Debian package (issue 39): `cmake --install build`
# puts the programs, the web pages, the docs, the Python client (where
# Debian's /usr/bin/python3 finds it) and a man page per program under
# CMAKE_INSTALL_PREFIX; `cpack -G DEB` in the build directory makes a .deb of
# the same files (tests/python/test_deb.py installs it into a scratch root and
# runs it).
include(GNUInstallDirs)

set(PA_INSTALL_PROGRAMS)
set(PA_MAN_SUMMARY_playarea "start, supervise and inspect a playarea simulator stack")
set(PA_MAN_SUMMARY_pa-sim "playarea's physics process (robots, laser, odometry)")
set(PA_MAN_SUMMARY_pa-render "playarea's OpenGL process (head cameras, viewer)")
set(PA_MAN_SUMMARY_pa-netgw "playarea's network gateway (TCP, UDP, HTTP, WebSocket)")
set(PA_MAN_SUMMARY_pa-map "check, convert and inspect playarea maps and world files")
set(PA_MAN_SUMMARY_pa-shmctl "list and remove playarea shared-memory instances")
foreach(prog playarea pa-sim pa-render pa-netgw pa-map pa-shmctl)
  if(TARGET ${prog})
    list(APPEND PA_INSTALL_PROGRAMS ${prog})
  endif()
endforeach()
install(TARGETS ${PA_INSTALL_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# pa-netgw looks for <bin>/../share/playarea/web.
install(DIRECTORY web/ DESTINATION ${CMAKE_INSTALL_DATADIR}/playarea/web)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        PATTERN __pycache__ EXCLUDE)

# The Python client: lib/python3.X/dist-packages is on Debian's sys.path
# under /usr and /usr/local alike (python3/dist-packages is not under
# /usr/local).
set(PA_SYSTEM_PYTHON /usr/bin/python3 CACHE FILEPATH "Debian's interpreter (install dir of the client)")
if(NOT PA_PYTHON_INSTALL_DIR AND EXISTS ${PA_SYSTEM_PYTHON})
  execute_process(COMMAND ${PA_SYSTEM_PYTHON} -c
                  "import sys; print('%d.%d' % sys.version_info[:2])"
                  OUTPUT_VARIABLE _pa_pyver OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(PA_PYTHON_INSTALL_DIR lib/python${_pa_pyver}/dist-packages)
endif()
if(PA_PYTHON_INSTALL_DIR)
  install(DIRECTORY clients/python/playarea DESTINATION ${PA_PYTHON_INSTALL_DIR}
          PATTERN __pycache__ EXCLUDE)
endif()

# A man page per program, from its own --help and --version (run at build
# time; not in the libFuzzer build, which installs nothing).
set(_pa_man_pages)
set(_pa_man_programs ${PA_INSTALL_PROGRAMS})
if(PA_FUZZ OR NOT EXISTS ${PA_SYSTEM_PYTHON})
  set(_pa_man_programs)
endif()
foreach(prog ${_pa_man_programs})
  set(_page ${CMAKE_BINARY_DIR}/man/${prog}.1)
  add_custom_command(
    OUTPUT ${_page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND ${PA_SYSTEM_PYTHON} ${CMAKE_SOURCE_DIR}/scripts/manpage.py
            $<TARGET_FILE:${prog}> ${prog} "${PA_MAN_SUMMARY_${prog}}" ${_page}
    DEPENDS ${prog} ${CMAKE_SOURCE_DIR}/scripts/manpage.py
    COMMENT "man page ${prog}.1" VERBATIM)
  list(APPEND _pa_man_pages ${_page})
endforeach()
if(_pa_man_pages)
  add_custom_target(pa_man_pages ALL DEPENDS ${_pa_man_pages})
  install(FILES ${_pa_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

# cpack -G DEB (run in the build directory).
set(CPACK_PACKAGE_NAME playarea)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "playarea maintainers <playarea@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "mobile-robot simulator: physics, OpenGL cameras and a TCP/UDP/HTTP gateway")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # Depends: from the programs' libraries
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3")
# libassimp: pa-netgw loads it by name to decode meshes (not seen by shlibdeps)
if(PA_ASSIMP_PACKAGE MATCHES "^libassimp[0-9]+$")
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", ${PA_ASSIMP_PACKAGE}")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-numpy, netcat-openbsd, xvfb")
include(CPack)

# Installation and the Debian package: the tools that apps/ builds go to bin/, the shipped
# profiles and configs to share/whale/ (where the tools look for profiles, relative to their
# executable), the docs to share/doc/whale/. `cpack -G DEB` in the build folder makes the package.
include(GNUInstallDirs)
foreach(tool whale-plan whale-sim whale-calibrate whale-run whale-profile)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
install(DIRECTORY profiles/ DESTINATION ${CMAKE_INSTALL_DATADIR}/whale/profiles FILES_MATCHING PATTERN "*.yaml")
install(DIRECTORY configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/whale/configs)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "whale")
set(CPACK_PACKAGE_VENDOR "whale")
set(CPACK_PACKAGE_CONTACT "whale maintainers <whale@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "plans, simulates and runs hybrid-parallel training on heterogeneous GPU clusters")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
# The runtime libraries the tools link against (Debian 12 names).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libyaml-cpp0.7, openmpi-bin, libopenmpi3")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
include(CPack)

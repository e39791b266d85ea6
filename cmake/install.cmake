# cmake --install: headers, static libraries, a CMake package (find_package(ggml-lite))
# and a pkg-config file.
include(CMakePackageConfigHelpers)

set(GL_INSTALL_TARGETS ggml-lite-core ggml-lite-graph ggml-lite-cpu ggml-lite-models)
install(TARGETS ${GL_INSTALL_TARGETS} EXPORT ggml-lite-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(dir ggml-lite/include graph/include backends/cpu/include models/include)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()

install(EXPORT ggml-lite-targets NAMESPACE ggml-lite::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ggml-lite)
# The CUDA backend has its own export file; the package config loads it (after
# find_dependency(CUDAToolkit)) when it is installed.
if(GL_CUDA)
  install(TARGETS ggml-lite-cuda EXPORT ggml-lite-cuda-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/backends/cuda/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ggml-lite-cuda-targets NAMESPACE ggml-lite::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ggml-lite)
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ggml-lite-config.cmake.in
  ${PROJECT_BINARY_DIR}/ggml-lite-config.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ggml-lite)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ggml-lite-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ggml-lite-config.cmake ${PROJECT_BINARY_DIR}/ggml-lite-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ggml-lite)

configure_file(${PROJECT_SOURCE_DIR}/cmake/ggml-lite.pc.in ${PROJECT_BINARY_DIR}/ggml-lite.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ggml-lite.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

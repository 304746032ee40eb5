# Install rules for `cmake --install`: the supervise binary, its man page and
# the bash and zsh completions. Included from supervisor/CMakeLists.txt, where
# the supervise target is defined.
#
# The man page is built from docs/man/supervise.1.in at configure time (the
# version is substituted), so the installed page always matches the binary.
include(GNUInstallDirs)

configure_file(${CMAKE_SOURCE_DIR}/docs/man/supervise.1.in
               ${CMAKE_BINARY_DIR}/man/supervise.1 @ONLY)

install(TARGETS supervise RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_BINARY_DIR}/man/supervise.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/completions/supervise.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME supervise)
install(FILES ${CMAKE_SOURCE_DIR}/completions/_supervise
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)

# Install rules for `cmake --install`: the supervise and supervise-exec binaries, their man pages and
# the bash and zsh completions. Included from supervisor/CMakeLists.txt, where
# the supervise target is defined.
#
# The man page is built from docs/man/supervise.1.in at configure time (the
# version is substituted), so the installed page always matches the binary;
# it is installed gzipped (-9n: no timestamp), as Debian wants and man reads.
include(GNUInstallDirs)

configure_file(${CMAKE_SOURCE_DIR}/docs/man/supervise.1.in
               ${CMAKE_BINARY_DIR}/man/supervise.1 @ONLY)
execute_process(COMMAND gzip -9nc ${CMAKE_BINARY_DIR}/man/supervise.1
                OUTPUT_FILE ${CMAKE_BINARY_DIR}/man/supervise.1.gz COMMAND_ERROR_IS_FATAL ANY)
configure_file(${CMAKE_SOURCE_DIR}/docs/man/supervise-exec.1.in
               ${CMAKE_BINARY_DIR}/man/supervise-exec.1 @ONLY)
execute_process(COMMAND gzip -9nc ${CMAKE_BINARY_DIR}/man/supervise-exec.1
                OUTPUT_FILE ${CMAKE_BINARY_DIR}/man/supervise-exec.1.gz COMMAND_ERROR_IS_FATAL ANY)

# supervise, and supervise-exec: the exec daemon's lean client (docs/serve.md).
install(TARGETS supervise supervise-exec RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_BINARY_DIR}/man/supervise.1.gz ${CMAKE_BINARY_DIR}/man/supervise-exec.1.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/completions/supervise.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME supervise)
# bash-completion loads a command's completion from a file of its name.
install(FILES ${CMAKE_SOURCE_DIR}/completions/supervise.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME supervise-exec)
install(FILES ${CMAKE_SOURCE_DIR}/completions/_supervise
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)

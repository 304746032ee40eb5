# `make package`: supervise as a Debian package (CPack, DEB generator),
# build/supervise_<version>_<arch>.deb. Included from the top CMakeLists.txt
# after every target, so the install rules of completions/install.cmake (the
# binary, man page, completions) and the ones below (docs, example policy,
# copyright, changelog, lintian overrides) are all in place.
#
# Only the supervise binary (and supervise-exec, the exec daemon's lean
# client) is installed: no test binary, no BPF object (the BPF programs are
# linked into supervise as skeletons). tests/package/ checks
# the contents and runs lintian on the result.
include(GNUInstallDirs)

# The documentation: README, docs/*.md, the audit event schema, the report
# screenshot the README shows, one example policy (`supervise validate` accepts it).
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB sv_doc_pages CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${sv_doc_pages} ${CMAKE_SOURCE_DIR}/docs/report.png DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/schema DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_SOURCE_DIR}/docs/examples/coding-agent.json
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# What Debian wants in every package's doc directory: the copyright file
# (machine-readable format) and the changelog, gzipped -9n like the man page
# (completions/install.cmake). The version is native (no Debian revision), so
# the changelog is changelog.gz, not changelog.Debian.gz.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/changelog)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/packaging)
execute_process(COMMAND gzip -9nc ${CMAKE_CURRENT_LIST_DIR}/changelog
                OUTPUT_FILE ${CMAKE_BINARY_DIR}/packaging/changelog.gz COMMAND_ERROR_IS_FATAL ANY)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/copyright ${CMAKE_BINARY_DIR}/packaging/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The one lintian tag left, with its reason (the statically linked zlib).
install(FILES ${CMAKE_CURRENT_LIST_DIR}/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME supervise)

# The exec daemon as a systemd user service, one instance per workspace
# (docs/serve.md, "As a service").
install(FILES ${CMAKE_CURRENT_LIST_DIR}/systemd/supervise-serve@.service
        DESTINATION lib/systemd/user)

# cpack (and `make install`) would build `all` first, the ~400 test targets
# included; the package needs only supervise, which `make package` builds.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME supervise)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "supervise maintainers <maintainers@users.noreply.a-seed-df2ac073.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "run a command tree under a file, exec and network policy")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"supervise runs a command and everything it starts under a JSON policy. Each
file write, exec and network connect the tree attempts is decided as close to
the kernel as the host allows (Landlock, cgroup BPF, seccomp user-notify, the
BPF LSM where the kernel runs it), a denial fails with a clear reason, and
every decision is one JSON audit event (native, OCSF or ECS; file, fd or
syslog over TLS).

An exec daemon (supervise serve, supervise exec) runs an agent's many
commands each in a session of its own under one loaded policy.

Operator commands: doctor (what this host can enforce), check (prove it with
real supervised runs), validate and explain (policies), report and verify
(audit trails).")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: derived by dpkg-shlibdeps from what the binary links (libbpf,
# libseccomp and libuv are linked statically by default: tools/cmake/StaticDeps.cmake).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Invisible to dpkg-shlibdeps: GnuTLS, librdkafka and libcurl are dlopen()ed
# when a syslog TLS, Kafka or OTLP sink is configured
# (supervisor/audit/sinks/shared_library.h); `supervise check` runs
# git, node and ip, and skips a check whose program is missing.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libgnutls30, librdkafka1, libcurl3-gnutls")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "git, nodejs, iproute2")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # supervise_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# The build is RelWithDebInfo; the package gets the stripped binary (lintian:
# unstripped-binary-or-object). The debug info stays in build/supervise.
set(CPACK_STRIP_FILES ON)
include(CPack)

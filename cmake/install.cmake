# `cmake --install` and the Debian package (cpack -G DEB). Where things go
# under the prefix (GNUInstallDirs; /usr for the package, /usr/local by
# default):
#   bin/outbox-relay, outbox-poller, outbox-audit
#   share/outbox-relay/sql/*.sql            the SQL to run on the database
#   share/outbox-relay/examples/*.yaml      example configurations
#   share/doc/outbox-relay/                 LICENSE, CHANGELOG.md, copyright
#   share/man/man1/*.1                      whatever docs/man/*.1 exist
include(GNUInstallDirs)

set(OUTBOX_PACKAGE outbox-relay)
set(OUTBOX_DOCDIR ${CMAKE_INSTALL_DATADIR}/doc/${OUTBOX_PACKAGE})

install(TARGETS outbox-relay outbox-poller outbox-audit
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
file(GLOB OUTBOX_SQL_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sql/*.sql)
install(FILES ${OUTBOX_SQL_FILES}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/${OUTBOX_PACKAGE}/sql)
file(GLOB OUTBOX_EXAMPLE_CONFIGS CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/config/*.yaml)
install(FILES ${OUTBOX_EXAMPLE_CONFIGS}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/${OUTBOX_PACKAGE}/examples)
file(GLOB OUTBOX_MAN_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/*.1)
if(OUTBOX_MAN_PAGES)
  install(FILES ${OUTBOX_MAN_PAGES}
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        DESTINATION ${OUTBOX_DOCDIR})
# Debian wants the licence as share/doc/<package>/copyright.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${OUTBOX_DOCDIR}
        RENAME copyright)

# cpack -G DEB (from the build directory): outbox-relay_VERSION_ARCH.deb.
# Its Depends come from dpkg-shlibdeps, which reads the libraries the three
# binaries link (libpq5, librdkafka1, ...), so the list cannot go stale.
set(CPACK_PACKAGE_NAME ${OUTBOX_PACKAGE})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "relays PostgreSQL transactional outbox rows to Kafka")
set(CPACK_PACKAGE_DESCRIPTION
    "outbox-relay streams an outbox table from PostgreSQL logical replication
to Kafka, at least once or exactly once, and confirms the replication slot
only past delivered events. outbox-poller publishes the same records by
polling; outbox-audit compares the outbox tables with Kafka.")
set(CPACK_PACKAGE_CONTACT "outbox-relay maintainers")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_GENERATOR DEB)
include(CPack)

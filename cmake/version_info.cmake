# Writes OUTPUT from INPUT with @OUTBOX_VERSION@ and @OUTBOX_GIT_REVISION@
# filled in. Run at every build (src/common/CMakeLists.txt), so a new commit
# shows in --version without re-running cmake; the file is rewritten only
# when its text changes, so nothing relinks otherwise.
#   cmake -DSOURCE_DIR=.. -DVERSION=x.y.z [-DREVISION=r] -DINPUT=.. -DOUTPUT=.. -P
# REVISION, when not empty, is used as is (a build from a tarball or an
# image build context without .git passes it); otherwise git is asked, and
# "unknown" is written when there is no git or no repository.
set(OUTBOX_VERSION "${VERSION}")
set(OUTBOX_GIT_REVISION "${REVISION}")
if(OUTBOX_GIT_REVISION STREQUAL "")
  set(OUTBOX_GIT_REVISION unknown)
  find_program(GIT_EXECUTABLE git)
  if(GIT_EXECUTABLE AND EXISTS "${SOURCE_DIR}/.git")
    execute_process(
      COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
      OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE head_rc ERROR_QUIET)
    if(head_rc EQUAL 0 AND NOT head STREQUAL "")
      set(OUTBOX_GIT_REVISION "${head}")
      # Uncommitted changes to tracked files: say so.
      execute_process(
        COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" diff-index --quiet HEAD --
        RESULT_VARIABLE dirty_rc ERROR_QUIET)
      if(NOT dirty_rc EQUAL 0)
        string(APPEND OUTBOX_GIT_REVISION "-dirty")
      endif()
    endif()
  endif()
endif()
configure_file("${INPUT}" "${OUTPUT}" @ONLY)

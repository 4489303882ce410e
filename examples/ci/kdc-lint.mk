# kdc-lint as make targets. Include this file from your Makefile (include kdc-lint.mk) or run
# it directly (make -f kdc-lint.mk kdc-lint).
#
#   make kdc-lint                      every finding (exit status 2 from make when there are any)
#   make kdc-lint-changed              only findings in files changed since KDC_LINT_BASE
#   make kdc-lint KDC_LINT_FLAGS=--format=sarif KDC_LINT_OUT=kdc-lint.sarif
#
# kdc-lint takes the exact compile flags from $(KDC_LINT_BUILD)/compile_commands.json: CMake
# writes it below; for a make-based build use bear instead (see the last rule).
KDC_LINT ?= kdc-lint
KDC_LINT_BUILD ?= build
KDC_LINT_PATHS ?= .
KDC_LINT_FLAGS ?=
KDC_LINT_BASE ?= $(shell git merge-base origin/main HEAD 2>/dev/null || echo HEAD)
KDC_LINT_OUT ?=

kdc_lint_out = $(if $(KDC_LINT_OUT),-o $(KDC_LINT_OUT))

.PHONY: kdc-lint kdc-lint-changed

kdc-lint: $(KDC_LINT_BUILD)/compile_commands.json
	$(KDC_LINT) -p $(KDC_LINT_BUILD) $(KDC_LINT_FLAGS) $(kdc_lint_out) $(KDC_LINT_PATHS)

kdc-lint-changed: $(KDC_LINT_BUILD)/compile_commands.json
	$(KDC_LINT) -p $(KDC_LINT_BUILD) --changed-since=$(KDC_LINT_BASE) $(KDC_LINT_FLAGS) \
	  $(kdc_lint_out) $(KDC_LINT_PATHS)

$(KDC_LINT_BUILD)/compile_commands.json:
	cmake -S . -B $(KDC_LINT_BUILD) -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
# A make-based build instead (Debian package bear):
#	bear --output $@ -- $(MAKE) -B all

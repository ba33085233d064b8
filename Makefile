# Keybay for Linux: build and install the CLI, the first-party plugins and the plugin header.
#
#   make install [PREFIX=/usr/local] [DESTDIR=/staging]
#   make uninstall [PREFIX=...] [DESTDIR=...]
#   make install-dev [PREFIX=...]   header and keybay-plugin.pc only, no build (plugin authors)
#   make test                       scripts/test.sh (every test)
#   make walkthrough                scripts/walkthrough.sh (the CLI against a throwaway store)
#
# Layout: PREFIX/bin/keybay-methods finds its plugins in <exe dir>/../lib/keybay/plugins, that
# is PREFIX/lib/keybay/plugins, so the two directories must stay in that relation.
#
# The CLI links the Swift runtime statically (-static-stdlib, see Package.swift), so the
# installed binary needs no Swift toolchain; only sanitizer builds (KEYBAY_SANITIZE, not
# installed) link it dynamically. The plugins are C and link only libsodium / libargon2 from
# the system.

PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
CONFIG ?= release
BIN ?=
INSTALL ?= install
TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

bindir = $(PREFIX)/bin
plugindir = $(PREFIX)/lib/keybay/plugins
includedir = $(PREFIX)/include/keybay
pkgconfigdir = $(PREFIX)/lib/pkgconfig

# Every first-party plugin (one directory under Plugins/ each; InstallTests checks that the
# installed CLI lists exactly those).
PLUGINS = libkeybay-file-root.so libkeybay-passphrase.so libkeybay-fido2.so libkeybay-recovery.so
HEADER = $(TOP)/Sources/CKeybayPlugin/include/keybay_plugin.h

all: build

build:
	cd "$(TOP)" && $(SWIFT) build -c $(CONFIG)

# BIN=DIR installs what is already built in DIR (no swift invocation: the tests use it).
install: $(if $(BIN),,build) install-dev
	bin="$(if $(BIN),$(BIN),$$(cd "$(TOP)" && $(SWIFT) build -c $(CONFIG) --show-bin-path))" && \
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(bindir)" "$(DESTDIR)$(plugindir)" && \
	$(INSTALL) -m 0755 "$$bin/keybay-methods" "$(DESTDIR)$(bindir)/keybay-methods" && \
	for p in $(PLUGINS); do $(INSTALL) -m 0755 "$$bin/$$p" "$(DESTDIR)$(plugindir)/$$p" || exit 1; done
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(PREFIX)/share/man/man1" "$(DESTDIR)$(PREFIX)/share/bash-completion/completions"
	$(INSTALL) -m 0644 "$(TOP)/docs/keybay-methods.1" "$(DESTDIR)$(PREFIX)/share/man/man1/keybay-methods.1"
	$(INSTALL) -m 0644 "$(TOP)/completions/keybay-methods.bash" "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/keybay-methods"

# The plugin header and keybay-plugin.pc (prefix substituted); builds nothing.
install-dev:
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(includedir)" "$(DESTDIR)$(pkgconfigdir)"
	$(INSTALL) -m 0644 $(HEADER) "$(DESTDIR)$(includedir)/keybay_plugin.h"
	sed -e 's|@PREFIX@|$(PREFIX)|g' "$(TOP)/keybay-plugin.pc.in" > "$(DESTDIR)$(pkgconfigdir)/keybay-plugin.pc"
	chmod 0644 "$(DESTDIR)$(pkgconfigdir)/keybay-plugin.pc"

uninstall:
	rm -f "$(DESTDIR)$(bindir)/keybay-methods" "$(DESTDIR)$(includedir)/keybay_plugin.h" \
		"$(DESTDIR)$(pkgconfigdir)/keybay-plugin.pc"
	rm -f "$(DESTDIR)$(PREFIX)/share/man/man1/keybay-methods.1" \
		"$(DESTDIR)$(PREFIX)/share/bash-completion/completions/keybay-methods"
	for p in $(PLUGINS); do rm -f "$(DESTDIR)$(plugindir)/$$p"; done
	rmdir "$(DESTDIR)$(plugindir)" "$(DESTDIR)$(PREFIX)/lib/keybay" "$(DESTDIR)$(includedir)" 2>/dev/null || true

test:
	"$(TOP)/scripts/test.sh"

walkthrough:
	"$(TOP)/scripts/walkthrough.sh"

.PHONY: all build install install-dev uninstall test walkthrough

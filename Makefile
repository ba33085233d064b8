# SPDX-License-Identifier: Apache-2.0
# Keybay for Linux: build and install the CLI, the first-party plugins and the plugin header.
#
#   make install [PREFIX=/usr/local] [DESTDIR=/staging]
#   make uninstall [PREFIX=...] [DESTDIR=...]
#   make install-dev [PREFIX=...]   for plugin authors, no build: the header, keybay-plugin.pc,
#                                   the guide and an example plugin (PREFIX/share/doc/keybay)
#   make test                       scripts/test.sh (every test)
#   make walkthrough                scripts/walkthrough.sh (the CLI against a throwaway store)
#
# The agent's systemd user units go to PREFIX/lib/systemd/user (keybay-agent.socket and .service,
# whose ExecStart names PREFIX/bin/keybay-methods).
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
libdir = $(PREFIX)/lib
pkgconfigdir = $(PREFIX)/lib/pkgconfig
docdir = $(PREFIX)/share/doc/keybay
# The agent's systemd user units (socket activation; docs/agent.md).
userunitdir = $(PREFIX)/lib/systemd/user

# Every first-party plugin (one directory under Plugins/ each; InstallTests checks that the
# installed CLI lists exactly those).
PLUGINS = libkeybay-file-root.so libkeybay-passphrase.so libkeybay-fido2.so libkeybay-recovery.so libkeybay-tpm2.so libkeybay-secret-service.so \
          libkeybay-tpm2-pin.so libkeybay-pkcs11.so libkeybay-portal.so
HEADER = $(TOP)/Sources/CKeybayPlugin/include/keybay_plugin.h
# The C API for hosts: libkeybay.so.1 (soname; libkeybay.so links to it), its header and keybay.pc.
CAPI_HEADER = $(TOP)/Sources/CKeybay/include/keybay/keybay.h
VERSION = $(shell sed -n 's/.*static let release = "\(.*\)"/\1/p' "$(TOP)/Sources/Keybay/API/KeybayVersion.swift")
# The installed documentation keeps docs/'s layout, so every link in it resolves in both trees:
# the guide (plugins.md) and what it links, the header beside it (docs/keybay_plugin.h is a link
# to it) and one complete example plugin with its Makefile (InstallTests checks every link).
DOCS = plugins.md cli.md format.md security.md agent.md fido2.md pkcs11.md recovery.md tpm2-pin.md
EXAMPLE = examples/c-plugin
EXAMPLE_FILES = Makefile README.md pin.c

all: build

build:
	cd "$(TOP)" && $(SWIFT) build -c $(CONFIG)

# BIN=DIR installs what is already built in DIR (no swift invocation: the tests use it).
install: $(if $(BIN),,build) install-dev
	bin="$(if $(BIN),$(BIN),$$(cd "$(TOP)" && $(SWIFT) build -c $(CONFIG) --show-bin-path))" && \
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(bindir)" "$(DESTDIR)$(plugindir)" && \
	$(INSTALL) -m 0755 "$$bin/keybay-methods" "$(DESTDIR)$(bindir)/keybay-methods" && \
	for p in $(PLUGINS); do $(INSTALL) -m 0755 "$$bin/$$p" "$(DESTDIR)$(plugindir)/$$p" || exit 1; done && \
	$(INSTALL) -m 0755 "$$bin/libkeybay.so" "$(DESTDIR)$(libdir)/libkeybay.so.1" && \
	ln -sf libkeybay.so.1 "$(DESTDIR)$(libdir)/libkeybay.so"
	$(INSTALL) -m 0644 $(CAPI_HEADER) "$(DESTDIR)$(includedir)/keybay.h"
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' "$(TOP)/keybay.pc.in" > "$(DESTDIR)$(pkgconfigdir)/keybay.pc"
	chmod 0644 "$(DESTDIR)$(pkgconfigdir)/keybay.pc"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(PREFIX)/share/man/man1" "$(DESTDIR)$(PREFIX)/share/bash-completion/completions"
	$(INSTALL) -m 0644 "$(TOP)/docs/keybay-methods.1" "$(DESTDIR)$(PREFIX)/share/man/man1/keybay-methods.1"
	$(INSTALL) -m 0644 "$(TOP)/completions/keybay-methods.bash" "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/keybay-methods"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(userunitdir)"
	$(INSTALL) -m 0644 "$(TOP)/systemd/keybay-agent.socket" "$(DESTDIR)$(userunitdir)/keybay-agent.socket"
	sed -e 's|@PREFIX@|$(PREFIX)|g' "$(TOP)/systemd/keybay-agent.service.in" > "$(DESTDIR)$(userunitdir)/keybay-agent.service"
	chmod 0644 "$(DESTDIR)$(userunitdir)/keybay-agent.service"

# The plugin header, keybay-plugin.pc (prefix substituted), the guide and the example; builds nothing.
install-dev:
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(includedir)" "$(DESTDIR)$(pkgconfigdir)" "$(DESTDIR)$(docdir)/$(EXAMPLE)"
	$(INSTALL) -m 0644 $(HEADER) "$(DESTDIR)$(includedir)/keybay_plugin.h"
	sed -e 's|@PREFIX@|$(PREFIX)|g' "$(TOP)/keybay-plugin.pc.in" > "$(DESTDIR)$(pkgconfigdir)/keybay-plugin.pc"
	chmod 0644 "$(DESTDIR)$(pkgconfigdir)/keybay-plugin.pc"
	for d in $(DOCS); do $(INSTALL) -m 0644 "$(TOP)/docs/$$d" "$(DESTDIR)$(docdir)/$$d" || exit 1; done
	$(INSTALL) -m 0644 $(HEADER) "$(DESTDIR)$(docdir)/keybay_plugin.h"
	for f in $(EXAMPLE_FILES); do $(INSTALL) -m 0644 "$(TOP)/docs/$(EXAMPLE)/$$f" "$(DESTDIR)$(docdir)/$(EXAMPLE)/$$f" || exit 1; done

uninstall:
	rm -f "$(DESTDIR)$(bindir)/keybay-methods" "$(DESTDIR)$(includedir)/keybay_plugin.h" \
		"$(DESTDIR)$(pkgconfigdir)/keybay-plugin.pc" "$(DESTDIR)$(includedir)/keybay.h" "$(DESTDIR)$(pkgconfigdir)/keybay.pc" \
		"$(DESTDIR)$(libdir)/libkeybay.so.1" "$(DESTDIR)$(libdir)/libkeybay.so"
	rm -f "$(DESTDIR)$(PREFIX)/share/man/man1/keybay-methods.1" \
		"$(DESTDIR)$(PREFIX)/share/bash-completion/completions/keybay-methods" \
		"$(DESTDIR)$(userunitdir)/keybay-agent.socket" "$(DESTDIR)$(userunitdir)/keybay-agent.service"
	for p in $(PLUGINS); do rm -f "$(DESTDIR)$(plugindir)/$$p"; done
	for d in $(DOCS) keybay_plugin.h; do rm -f "$(DESTDIR)$(docdir)/$$d"; done
	for f in $(EXAMPLE_FILES); do rm -f "$(DESTDIR)$(docdir)/$(EXAMPLE)/$$f"; done
	rmdir "$(DESTDIR)$(plugindir)" "$(DESTDIR)$(PREFIX)/lib/keybay" "$(DESTDIR)$(includedir)" 2>/dev/null || true
	rmdir "$(DESTDIR)$(userunitdir)" "$(DESTDIR)$(PREFIX)/lib/systemd" 2>/dev/null || true
	rmdir "$(DESTDIR)$(docdir)/$(EXAMPLE)" "$(DESTDIR)$(docdir)/examples" "$(DESTDIR)$(docdir)" 2>/dev/null || true

test:
	"$(TOP)/scripts/test.sh"

walkthrough:
	"$(TOP)/scripts/walkthrough.sh"

.PHONY: all build install install-dev uninstall test walkthrough

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The Debian packaging (debian/), checked in seconds without building a package (the long check,
/// which builds the .debs and installs them in a clean root, is scripts/deb-check.sh):
/// `make install` with debian/rules' own variables stages exactly the files the
/// debian/*.install files hand out, each to one package of debian/control; every library a
/// plugin opens with dlopen is a Recommends or Suggests of keybay-plugins (dh_shlibdeps cannot
/// see those); the changelog's version is the release; debian/copyright is machine-readable.
@Suite struct PackagingTests {
    static let debian = packageDirectory + "/debian"

    // MARK: - debian/control

    /// The paragraphs of a deb822 file (debian/control): field name to value, continuation lines
    /// joined with "\n", comment lines left out.
    static func paragraphs(_ text: String) -> [[String: String]] {
        var result: [[String: String]] = [], current: [String: String] = [:], last: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("#") { continue }
            if line.trimmingCharacters(in: .whitespaces).isEmpty {
                if !current.isEmpty { result.append(current) }
                current = [:]; last = nil; continue
            }
            if line.first == " " || line.first == "\t", let field = last {
                current[field]! += "\n" + line.trimmingCharacters(in: .whitespaces)
            } else if let colon = line.firstIndex(of: ":") {
                let field = String(line[..<colon])
                current[field] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                last = field
            }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    /// The package names a relationship field names, every alternative of each entry
    /// (versions, architectures and substitution variables left out).
    static func names(inRelation value: String?) -> Set<String> {
        Set((value ?? "").split(separator: ",").flatMap { $0.split(separator: "|") }.compactMap { entry -> String? in
            let name = entry.trimmingCharacters(in: .whitespacesAndNewlines).split(whereSeparator: { " (:[".contains($0) }).first.map(String.init)
            return name.flatMap { $0.hasPrefix("${") || $0.isEmpty ? nil : $0 }
        })
    }

    static func binaryPackages() throws -> [[String: String]] {
        let control = try String(contentsOfFile: debian + "/control", encoding: .utf8)
        return paragraphs(control).filter { $0["Package"] != nil }
    }

    // MARK: - debian/*.install against the staged install

    /// The files (and links) under `root`, relative to it.
    static func files(under root: String) throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: root).filter { path in
            var isDirectory: ObjCBool = false
            let full = root + "/" + path
            let isLink = (try? FileManager.default.destinationOfSymbolicLink(atPath: full)) != nil
            return isLink || (FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory) && !isDirectory.boolValue)
        }.sorted()
    }

    /// Whether an .install line's source pattern claims `path` as dh_install does: a glob on the
    /// path (a `*` stays within one directory), or a directory that holds it.
    static func claims(_ pattern: String, _ path: String) -> Bool {
        fnmatch(pattern, path, FNM_PATHNAME) == 0 || path.hasPrefix(pattern + "/")
    }

    /// What is wrong between the staged files and the packages' .install patterns: a pattern
    /// that claims nothing, a file no package claims, a file two packages claim.
    static func problems(staged: [String], installs: [String: [String]]) -> [String] {
        var problems: [String] = []
        for (package, patterns) in installs.sorted(by: { $0.key < $1.key }) {
            for pattern in patterns where !staged.contains(where: { claims(pattern, $0) }) {
                problems.append("debian/\(package).install: \(pattern) is nothing make install stages")
            }
        }
        for file in staged {
            let owners = installs.filter { $0.value.contains { claims($0, file) } }.keys.sorted()
            if owners.isEmpty { problems.append("\(file): in no package") }
            if owners.count > 1 { problems.append("\(file): in \(owners.joined(separator: " and "))") }
        }
        return problems
    }

    static func installFiles() throws -> [String: [String]] {
        var installs: [String: [String]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: debian) where name.hasSuffix(".install") {
            let text = try String(contentsOfFile: debian + "/" + name, encoding: .utf8)
            installs[String(name.dropLast(".install".count))] = text.split(separator: "\n").compactMap { line in
                line.hasPrefix("#") ? nil : line.split(separator: " ").first.map(String.init)
            }
        }
        return installs
    }

    @Test func theInstallFilesHandOutExactlyWhatMakeInstallStages() throws {
        let flags = try run("/usr/bin/make", ["-s", "--no-print-directory", "-C", packageDirectory, "-f", "debian/rules", "install-flags"],
                            environment: ["PATH": "/usr/bin:/bin"])
        #expect(flags.status == 0 && flags.out.contains("PREFIX=/usr"), "debian/rules install-flags: \(flags.out) \(flags.stderr)")
        let box = Sandbox()
        let stage = box.root + "/stage"
        let make = try run("/usr/bin/make", ["-s", "-C", packageDirectory, "install", "BIN=" + buildDirectory, "DESTDIR=" + stage]
                           + flags.out.split(whereSeparator: \.isWhitespace).map(String.init),
                           environment: ["PATH": "/usr/bin:/bin", "HOME": box.root])
        #expect(make.status == 0, "\(make.stderr)")
        let staged = try Self.files(under: stage)
        #expect(staged.contains("usr/lib/libkeybay.so.1") && staged.contains("usr/lib/keybay/plugins/libkeybay-file-root.so")
                && staged.contains("usr/lib/python3/dist-packages/keybay/__init__.py"), "\(staged)")
        // python3-keybay names the library it goes with, as installed (no DESTDIR in it): docs/python.md.
        let recorded = (try? String(contentsOfFile: stage + "/usr/lib/python3/dist-packages/keybay/_installed.py", encoding: .utf8)) ?? ""
        #expect(recorded.contains("LIBRARY = '/usr/lib/libkeybay.so.1'"), "_installed.py: \(recorded)")
        let installs = try Self.installFiles()
        #expect(Self.problems(staged: staged, installs: installs).isEmpty, "\(Self.problems(staged: staged, installs: installs))")
        // One .install per binary package, and the four the issue names among them.
        let packages = try Self.binaryPackages().compactMap { $0["Package"] }
        #expect(Set(installs.keys) == Set(packages), "control: \(packages), .install files: \(installs.keys.sorted())")
        #expect(Set(packages).isSuperset(of: ["keybay-methods", "libkeybay1", "libkeybay-dev", "keybay-plugins"]))
        // The plugins are where the CLI (/usr/bin/../lib/keybay/plugins) and the library (/usr/lib/keybay/plugins) look,
        // and the helper that runs them isolated where both look for it (/usr/bin/../libexec/keybay, /usr/lib/../libexec/keybay).
        #expect(installs["keybay-plugins"] == ["usr/lib/keybay/plugins/libkeybay-*.so", "usr/libexec/keybay/keybay-plugin-host"]
                && installs["libkeybay1"] == ["usr/lib/libkeybay.so.1"]
                && installs["keybay-methods"]?.contains("usr/bin/keybay-methods") == true, "\(installs)")
    }

    /// The check above can fail: a pattern claiming nothing, a file left out and a file in two packages are each reported.
    @Test func aFileInNoPackageOrTwoIsReported() {
        let staged = ["usr/bin/keybay-methods", "usr/lib/libkeybay.so.1", "usr/lib/keybay/plugins/libkeybay-a.so"]
        #expect(Self.problems(staged: staged, installs: ["a": ["usr/bin/keybay-methods", "usr/lib/libkeybay.so.1"], "b": ["usr/lib/keybay/plugins/libkeybay-*.so"]]).isEmpty)
        #expect(Self.problems(staged: staged, installs: ["a": ["usr/bin/keybay-methods"], "b": ["usr/lib/keybay/plugins"]])
                == ["usr/lib/libkeybay.so.1: in no package"])
        #expect(Self.problems(staged: staged, installs: ["a": ["usr/bin/keybay-methods", "usr/lib/*.so.1", "usr/lib/keybay"], "b": ["usr/lib/*/*/*.so"]])
                == ["usr/lib/keybay/plugins/libkeybay-a.so: in a and b"])
        #expect(Self.problems(staged: staged, installs: ["a": ["usr/bin/*", "usr/lib", "usr/share/man"]]) == ["debian/a.install: usr/share/man is nothing make install stages"])
    }

    // MARK: - what the plugins open with dlopen

    /// The Debian package holding each library a first-party plugin opens at run time, and how
    /// keybay-plugins must name it: Recommends (opened whenever the plugin is used), or Suggests
    /// (opened only when KEYBAY_TPM2_TCTI names that TPM transport).
    static let openedLibraries: [String: (package: String, relation: String)] = [
        "libsecret-1.so.0": ("libsecret-1-0", "Recommends"),
        "libtss2-esys.so.0": ("libtss2-esys-3.0.2-0", "Recommends"),
        "libtss2-sys.so.1": ("libtss2-sys1", "Recommends"),
        "libcrypto.so.3": ("libssl3", "Recommends"),
        "libtss2-tctildr.so.0": ("libtss2-tctildr0", "Recommends"),
        "libtss2-mu.so.0": ("libtss2-mu0", "Recommends"),
        "libtss2-rc.so.0": ("libtss2-rc0", "Recommends"),
        "libtss2-tcti-device.so.0": ("libtss2-tcti-device0", "Recommends"),
        "libtss2-tcti-swtpm.so.0": ("libtss2-tcti-swtpm0", "Suggests"),
        "libtss2-tcti-mssim.so.0": ("libtss2-tcti-mssim0", "Suggests"),
        "libtss2-tcti-tabrmd.so.0": ("libtss2-tcti-tabrmd0", "Suggests"),
        "libfido2.so.1": ("libfido2-1", "Recommends"),
        "libqrencode.so.4": ("libqrencode4", "Recommends"),
        "libp11-kit.so.0": ("libp11-kit0", "Recommends"),
        "libgio-2.0.so.0": ("libglib2.0-0", "Recommends"),
    ]

    /// The sonames the plugins' C sources (Plugins/Support's, which they link, included: the TPM
    /// connection, the recovery key's QR code) name as string literals, with the TPM transports'
    /// "libtss2-tcti-%s.so.0" expanded over tcti_names.
    static func sonamesOpenedBySources() throws -> Set<String> {
        let directory = packageDirectory + "/Plugins" // Plugins/Support too
        let sources = try FileManager.default.subpathsOfDirectory(atPath: directory).filter { $0.hasSuffix(".c") }.map { directory + "/" + $0 }
        let literal = try NSRegularExpression(pattern: #""(lib[A-Za-z0-9_.+-]*(?:%s)?[A-Za-z0-9_.+-]*\.so\.[0-9]+)""#)
        let tcti = try NSRegularExpression(pattern: #"tcti_names\[\]\s*=\s*\{([^}]*)\}"#)
        var found: Set<String> = []
        for file in sources {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            func captures(_ regex: NSRegularExpression) -> [String] {
                regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } }
            }
            let transports = captures(tcti).flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " \"\n")) } }
            for name in captures(literal) {
                if name.contains("%s") {
                    #expect(!transports.isEmpty, "\(file): \(name) with no tcti_names beside it")
                    found.formUnion(transports.map { name.replacingOccurrences(of: "%s", with: $0) })
                } else {
                    found.insert(name)
                }
            }
        }
        return found
    }

    @Test func everyLibraryAPluginOpensIsARelationOfKeybayPlugins() throws {
        let opened = try Self.sonamesOpenedBySources()
        #expect(opened.isSuperset(of: ["libsecret-1.so.0", "libfido2.so.1", "libqrencode.so.4", "libtss2-esys.so.0", "libtss2-tcti-device.so.0"]),
                "the walk found \(opened.sorted())")
        let unknown = opened.subtracting(Self.openedLibraries.keys)
        #expect(unknown.isEmpty, "plugins open \(unknown.sorted()): name their packages in openedLibraries and debian/control")
        let plugins = try #require(try Self.binaryPackages().first { $0["Package"] == "keybay-plugins" })
        let strong = Self.names(inRelation: plugins["Depends"]).union(Self.names(inRelation: plugins["Recommends"]))
        let suggested = Self.names(inRelation: plugins["Suggests"])
        for soname in opened.sorted() {
            guard let entry = Self.openedLibraries[soname] else { continue }
            let (package, relation) = (entry.package, entry.relation)
            let named = relation == "Recommends" ? strong.contains(package) : strong.union(suggested).contains(package)
            #expect(named, "\(soname): \(package) is not in keybay-plugins' \(relation == "Recommends" ? "Depends or Recommends" : "relations")")
            // Where the library is on this machine, the package holding it is the one named.
            if let owner = try Self.installedPackage(of: soname) {
                #expect(owner == package, "\(soname) is in \(owner) on this machine, not \(package)")
            }
        }
    }

    /// The package holding the file the dynamic linker's cache has for a soname (nil when it is
    /// not installed here).
    static func installedPackage(of soname: String) throws -> String? {
        let cache = try run("/sbin/ldconfig", ["-p"], environment: ["PATH": "/usr/bin:/bin:/sbin", "LC_ALL": "C"])
        let line = cache.out.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(soname + " ") }
        guard let path = line?.components(separatedBy: " => ").last else { return nil }
        // dpkg knows a file by the path its package ships it at, the soname's link or the file it
        // names, under /lib or /usr/lib (merged /usr: either way the same file).
        var resolved = path
        if let real = realpath(path, nil) { resolved = String(cString: real); free(real) }
        var candidates: [String] = []
        for p in [path, resolved] {
            let usr = p.hasPrefix("/lib/") ? "/usr" + p : p
            candidates += [usr, usr.replacingOccurrences(of: "^/usr/lib/", with: "/lib/", options: .regularExpression)]
        }
        for candidate in candidates {
            let owner = try run("/usr/bin/dpkg", ["-S", candidate], environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"])
            if owner.status == 0, let name = owner.out.split(separator: ":").first { return String(name) }
        }
        throw KeybayTestFailure("\(soname) is \(path) here, which no package holds (dpkg -S \(candidates))")
    }

    /// The relation parsing can fail to find a package: a name given only as an alternative or
    /// with a version is still found, a missing one is not.
    @Test func relationsAreReadWithTheirAlternatives() {
        let names = Self.names(inRelation: "libfoo1 (>= 1.0), libbar0t64 | libbar0,\n ${shlibs:Depends}, python3:any")
        #expect(names == ["libfoo1", "libbar0t64", "libbar0", "python3"])
    }

    // MARK: - changelog and copyright

    @Test func theChangelogIsTheReleaseAndTheCopyrightIsMachineReadable() throws {
        let changelog = try String(contentsOfFile: Self.debian + "/changelog", encoding: .utf8)
        let first = changelog.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.hasPrefix("keybay (\(KeybayVersion.release)) "), "debian/changelog: \(first), the release is \(KeybayVersion.release)")
        let copyright = Self.paragraphs(try String(contentsOfFile: Self.debian + "/copyright", encoding: .utf8))
        #expect(copyright.first?["Format"] == "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
        #expect(copyright.contains { $0["Files"] == "*" && $0["License"] == "Apache-2.0" }, "\(copyright)")
        #expect(copyright.contains { $0["License"]?.hasPrefix("Apache-2.0\n") == true && $0["License"]!.contains("/usr/share/common-licenses/Apache-2.0") })
        #expect(try String(contentsOfFile: Self.debian + "/source/format", encoding: .utf8) == "3.0 (native)\n")
        #expect(try String(contentsOfFile: Self.debian + "/control", encoding: .utf8).contains("debhelper-compat (= 13)"))
    }
}

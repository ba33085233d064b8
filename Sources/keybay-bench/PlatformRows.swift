// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// 8. CLI get on a tpm2 store vs tpm2_unseal of a sealed object on the same swtpm (a persistent
/// handle: the reference does the least TPM work an unseal can, ReadPublic then Unseal).
@MainActor func benchTpm2() {
    if let swtpm = which("swtpm"), let unseal = which("tpm2_unseal") {
        let (state, tcti, tpmEnv) = softwareTPMForRow(swtpm, named: "swtpm", root: "tpm2")
        defer { stopSoftwareTPM(state) }
        let tools = "export TPM2TOOLS_TCTI='\(tcti)' TSS2_LOG=all+none; cd '\(state)' && head -c 32 /dev/urandom > secret && " +
            "tpm2_createprimary -Q -C o -G ecc -c p.ctx && tpm2_create -Q -C p.ctx -i secret -u s.pub -r s.priv && tpm2_flushcontext -t && " +
            "tpm2_load -Q -C p.ctx -u s.pub -r s.priv -c s.ctx && tpm2_evictcontrol -Q -C o -c s.ctx 0x81010001 && tpm2_flushcontext -t"
        precondition(system(tools) == 0, "tpm2-tools could not make the reference object")
        precondition(spawnTimed([cli, "--app", "tpm2get", "set", "k", "v"], env: tpmEnv).status == 0, "set on tpm2 failed")
        let m = alternate(runs, ours: [cli, "--app", "tpm2get", "get", "k"], reference: [unseal, "-c", "0x81010001"], env: tpmEnv)
        reportTimes("CLI get on a tpm2 store vs tpm2_unseal of a persistent sealed object (same swtpm)", m.ours, m.reference, target: "<= 1.2")
    } else {
        print("  (swtpm or tpm2-tools not installed: run scripts/bench.sh)")
    }
}

/// 9. CLI get on a secret-service store vs secret-tool lookup of one item on the same daemon:
/// both start, connect to the session bus, open a session (secret-tool an encrypted one, ours a
/// plain one: performance.md says why), find one item by its attributes and fetch its secret;
/// ours then reads and authenticates the store.
@MainActor func benchSecretServiceGet() {
    if let bus = getenv("DBUS_SESSION_BUS_ADDRESS").map({ String(cString: $0) }), let secretTool = which("secret-tool") {
        var busEnv = env
        busEnv["DBUS_SESSION_BUS_ADDRESS"] = bus
        if let runtime = getenv("XDG_RUNTIME_DIR") { busEnv["XDG_RUNTIME_DIR"] = String(cString: runtime) }
        let made = spawnTimed([cli, "--app", "ssget", "--root", "secret-service", "set", "record/42", "value"], env: busEnv)
        precondition(made.status == 0, "cannot make a store on the secret-service root (is a Secret Service running on \(bus)?)")
        let m = alternate(runs, ours: [cli, "--app", "ssget", "get", "record/42"],
                          reference: [secretTool, "lookup", "keybay-application", "ssget"], env: busEnv)
        reportTimes("CLI get (secret-service store) vs secret-tool lookup (same daemon)", m.ours, m.reference, target: "<= 1.0")
        _ = spawnTimed([cli, "--app", "ssget", "reset", "--yes"], env: busEnv) // the item goes with the store
    } else {
        print("  (no session bus or secret-tool: run scripts/bench.sh)")
    }
}

/// 10. A tpm2-pin unlock (CLI get, the PIN on a descriptor, a file-root store) vs tpm2_unseal
/// with `-p PIN` of a comparable object (a sealed 32-byte secret whose authValue is the PIN, not
/// noDA) at a persistent handle on the same swtpm: the reference does the least TPM work a
/// password unseal can (an unsalted HMAC session, ReadPublic, Unseal); ours reads the lockout
/// counters, re-creates the primary, loads the object, starts a salted policy session and
/// unseals, then opens the store. A second row beside it: the same unlock against tpm2-tools
/// unsealing an object with our policy (PolicyAuthValue, no userWithAuth) the way a script does,
/// through a policy session salted with a persistent primary and the response encrypted
/// (tpm2_startauthsession --policy-session -c, tpm2_policyauthvalue, tpm2_unseal -p
/// session:FILE+PIN, tpm2_flushcontext): four processes, timed together.
@MainActor func benchTpm2Pin() {
    guard let swtpm = which("swtpm"), let unseal = which("tpm2_unseal") else {
        print("  (swtpm or tpm2-tools not installed: run scripts/bench.sh)")
        return
    }
    let (state, tcti, tpmEnv) = softwareTPMForRow(swtpm, named: "swtpm-pin")
    defer { stopSoftwareTPM(state) }
    let pin = "2468"
    writeFile(base + "/tpm2-pin", Array((pin + "\n").utf8))
    // Many runs on one TPM: its lockout must never be reached (no wrong PIN is tried anyway).
    let tools = "export TPM2TOOLS_TCTI='\(tcti)' TSS2_LOG=all+none; cd '\(state)' && head -c 32 /dev/urandom > secret && " +
        "tpm2_dictionarylockout -Q -s -n 1000 -t 1 -l 1 && " +
        "tpm2_createprimary -Q -C o -G ecc -c p.ctx && tpm2_create -Q -C p.ctx -i secret -p \(pin) -a 'fixedtpm|fixedparent|userwithauth' -u s.pub -r s.priv && " +
        "tpm2_flushcontext -t && tpm2_load -Q -C p.ctx -u s.pub -r s.priv -c s.ctx && tpm2_evictcontrol -Q -C o -c s.ctx 0x81010002 && tpm2_flushcontext -t && " +
        // Our policy: PolicyAuthValue alone, no userWithAuth; the primary persistent, to salt with.
        "tpm2_startauthsession -Q -S trial.ctx && tpm2_policyauthvalue -Q -S trial.ctx -L policy.dat && tpm2_flushcontext trial.ctx && " +
        "tpm2_create -Q -C p.ctx -i secret -p \(pin) -L policy.dat -a 'fixedtpm|fixedparent' -u sp.pub -r sp.priv && tpm2_flushcontext -t && " +
        "tpm2_load -Q -C p.ctx -u sp.pub -r sp.priv -c sp.ctx && tpm2_evictcontrol -Q -C o -c sp.ctx 0x81010003 && tpm2_flushcontext -t && " +
        "tpm2_evictcontrol -Q -C o -c p.ctx 0x81000003 && tpm2_flushcontext -t && tpm2_readpublic -Q -c 0x81000003 -n primary.name"
    precondition(system(tools) == 0, "tpm2-tools could not make the reference objects")
    precondition(spawnTimed([cli, "--app", "tpm2pin", "set", "k", "v"], env: tpmEnv).status == 0, "set failed")
    precondition(spawnTimed([cli, "--app", "tpm2pin", "enroll", "tpm2-pin", "--pin-fd", "0"], env: tpmEnv, stdin: base + "/tpm2-pin").status == 0,
                 "enroll tpm2-pin failed")
    let m = alternate(runs, ours: [cli, "--app", "tpm2pin", "get", "k", "--pin-fd", "0"], reference: [unseal, "-c", "0x81010002", "-p", pin],
                      env: tpmEnv, stdin: base + "/tpm2-pin")
    reportTimes("tpm2-pin unlock (CLI get, file-root store) vs tpm2_unseal -p PIN of a persistent sealed object (same swtpm)", m.ours, m.reference,
                target: "<= 1.2")
    let tool = { (name: String, arguments: [String]) in [(which(name) ?? "/usr/bin/" + name)] + arguments }
    let session = state + "/session.ctx"
    let salted = alternate(runs, ours: [cli, "--app", "tpm2pin", "get", "k", "--pin-fd", "0"], referenceSteps: [
        tool("tpm2_startauthsession", ["-Q", "--policy-session", "-S", session, "-c", "0x81000003", "-n", state + "/primary.name"]),
        tool("tpm2_policyauthvalue", ["-Q", "-S", session]),
        [unseal, "-c", "0x81010003", "-p", "session:" + session + "+" + pin],
        tool("tpm2_flushcontext", [session]),
    ], env: tpmEnv, stdin: base + "/tpm2-pin")
    reportTimes("the same vs tpm2-tools unsealing an object with our policy through a salted policy session (startauthsession -c primary, " +
                "policyauthvalue, unseal -p session+PIN, flushcontext; same swtpm)", salted.ours, salted.reference, target: "<= 1.2 (comparable)")
}

// SPDX-License-Identifier: Apache-2.0
import Glibc

/// 13. CLI get on a tpm2 store sealed with a signed PCR policy (an RSA-2048 key, its signature of
/// PCR 11 now in systemd-measure's JSON) vs tpm2_unseal of an object under the same
/// PolicyAuthorize policy on the same swtpm: before each reference run, untimed, tpm2-tools load
/// the key, verify the signature, start a policy session and run PolicyPCR and PolicyAuthorize;
/// only `tpm2_unseal -p session:FILE` is timed. Ours does all of it (LoadExternal,
/// VerifySignature, PolicyPCR, PolicyAuthorize, Unseal, the counter, the signature file) and
/// opens the store.
@MainActor func benchSignedPolicy() {
    guard let swtpm = which("swtpm"), let unseal = which("tpm2_unseal"), which("openssl") != nil else {
        print("  (swtpm, tpm2-tools or openssl not installed: run scripts/bench.sh)")
        return
    }
    let (state, tcti, tpmEnv) = softwareTPMForRow(swtpm, named: "swtpm-signed", root: "tpm2")
    defer { stopSoftwareTPM(state) }
    let shell = "export TPM2TOOLS_TCTI='\(tcti)' TSS2_LOG=all+none; cd '\(state)' && "
    // The key, PCR 11's policy signed as systemd-measure signs it, the JSON, and the reference object.
    let setup = shell +
        "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out key.pem 2>/dev/null && openssl pkey -in key.pem -pubout -out pub.pem && " +
        "tpm2_pcrread -Q -o pcr.bin sha256:11 && tpm2_startauthsession -Q -S t.ctx && tpm2_policypcr -Q -S t.ctx -l sha256:11 -f pcr.bin -L pcr.policy && " +
        "tpm2_flushcontext t.ctx && openssl dgst -sha256 -sign key.pem -out pcr.sig pcr.policy && " +
        "printf '{\"sha256\":[{\"pcrs\":[11],\"pkfp\":\"%s\",\"pol\":\"%s\",\"sig\":\"%s\"}]}' " +
        "\"$(openssl rsa -pubin -in pub.pem -RSAPublicKey_out -outform DER 2>/dev/null | sha256sum | cut -c1-64)\" \"$(od -An -v -tx1 pcr.policy | tr -d ' \\n')\" " +
        "\"$(base64 -w0 pcr.sig)\" > sig.json && " +
        "tpm2_loadexternal -Q -C o -G rsa -u pub.pem -c key.ctx -n key.name && tpm2_flushcontext -t && " +
        "tpm2_startauthsession -Q -S t.ctx && tpm2_policyauthorize -Q -S t.ctx -L authorized.policy -i pcr.policy -n key.name && tpm2_flushcontext t.ctx && " +
        "head -c 32 /dev/urandom > secret && tpm2_createprimary -Q -C o -G ecc -c p.ctx && " +
        "tpm2_create -Q -C p.ctx -i secret -L authorized.policy -a 'fixedtpm|fixedparent' -u s.pub -r s.priv && tpm2_flushcontext -t && " +
        "tpm2_load -Q -C p.ctx -u s.pub -r s.priv -c s.ctx && tpm2_evictcontrol -Q -C o -c s.ctx 0x81010002 && tpm2_flushcontext -t"
    precondition(system(setup) == 0, "tpm2-tools or openssl could not make the reference object")
    let made = spawnTimed([cli, "--app", "tpm2signed", "init", "--opt", "pcr-public-key=\(state)/pub.pem", "--opt", "pcr-signature=\(state)/sig.json"],
                          env: tpmEnv)
    precondition(made.status == 0 && spawnTimed([cli, "--app", "tpm2signed", "set", "k", "v"], env: tpmEnv).status == 0, "init on a signed tpm2 root failed")
    let prepare = shell +
        "tpm2_loadexternal -Q -C o -G rsa -u pub.pem -c key.ctx && tpm2_verifysignature -Q -c key.ctx -g sha256 -m pcr.policy -s pcr.sig -f rsassa -t ticket.tkt && " +
        "tpm2_flushcontext -t && tpm2_startauthsession -Q --policy-session -S s.ctx && tpm2_policypcr -Q -S s.ctx -l sha256:11 && " +
        "tpm2_policyauthorize -Q -S s.ctx -i pcr.policy -n key.name -t ticket.tkt"
    var ours: [Double] = [], reference: [Double] = []
    for _ in 0..<runs {
        let a = spawnTimed([cli, "--app", "tpm2signed", "get", "k"], env: tpmEnv)
        precondition(a.status == 0, "get on the signed tpm2 root failed")
        ours.append(a.seconds)
        precondition(system(prepare) == 0, "tpm2-tools could not prepare the PolicyAuthorize session")
        let b = spawnTimed([unseal, "-c", "0x81010002", "-p", "session:\(state)/s.ctx"], env: tpmEnv)
        precondition(b.status == 0, "tpm2_unseal through the PolicyAuthorize session failed")
        reference.append(b.seconds)
        _ = system(shell + "tpm2_flushcontext -s >/dev/null 2>&1; tpm2_flushcontext -t >/dev/null 2>&1")
    }
    reportTimes("CLI get on a tpm2 store with a signed PCR policy vs tpm2_unseal through a PolicyAuthorize session (same swtpm)",
                median(ours), median(reference), target: "<= 1.2")
}

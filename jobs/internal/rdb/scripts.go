package rdb

// Scripts maps a name to the SHA1 of each of the job system's Lua scripts
// (what EVALSHA sends): for checks that watch the scripts on the wire,
// such as the test that every script's keys share one Cluster slot.
func Scripts() map[string]string {
	return map[string]string{
		"submit": submitScript.Hash(), "rollback": rollbackScript.Hash(),
		"claim": claimScript.Hash(), "endAttempt": endAttemptScript.Hash(), "progress": progressScript.Hash(),
		"succeed": succeedScript.Hash(), "refund (fail, cancel)": refundScript.Hash(), "delete": deleteScript.Hash(),
		"dropInputs": dropInputsScript.Hash(), "idemRelease": idemReleaseScript.Hash(),
		"provision": provisionScript.Hash(), "addCredits": addCreditsScript.Hash(),
		"promote": promoteScript.Hash(), "rate": rateScript.Hash(),
		"expireLease": expireLeaseScript.Hash(), "migration lock release": releaseScript.Hash(),
	}
}

package job

import (
	"fmt"

	batch "k8s.io/api/batch/v1"
)

// matchSuccessPolicy returns the SuccessPolicy message of the first rule the
// succeeded indexes satisfy.
func matchSuccessPolicy(policy *batch.SuccessPolicy, completions int32, succeeded indexSet) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		if ruleMatches(rule, completions, succeeded) {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}

func ruleMatches(rule batch.SuccessPolicyRule, completions int32, succeeded indexSet) bool {
	if rule.SucceededIndexes == nil {
		return rule.SucceededCount != nil && succeeded.total() >= int(*rule.SucceededCount)
	}
	want := parseIndexSet(*rule.SucceededIndexes, int(completions))
	if len(want) == 0 {
		return false
	}
	covered := intersectionSize(want, succeeded)
	if rule.SucceededCount != nil {
		return covered >= int(*rule.SucceededCount)
	}
	return covered == want.total()
}

// intersectionSize counts the indexes present in both sets.
func intersectionSize(a, b indexSet) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i].first, b[j].first), min(a[i].last, b[j].last)
		if lo <= hi {
			n += hi - lo + 1
		}
		if a[i].last < b[j].last {
			i++
		} else {
			j++
		}
	}
	return n
}

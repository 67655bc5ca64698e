// Package accountingtest holds closed forms that tests in several packages
// check privacy receipts against, kept apart from package accounting so
// that each check stays independent of the accountant it checks (it
// imports nothing of fairdp).
package accountingtest

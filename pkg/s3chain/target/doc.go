// Package target names the backup targets a driver or operator uses: the
// NAME=URL list (the first is the default), the credentials that open each
// one (a request's secrets or a key=value credentials file), and the backup
// references "[TARGET:]CHAIN@BACKUP" that point into them.
//
// It never logs or formats a secret: Secrets has no String method that
// prints values, and errors name keys, never their values.
package target

package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOptionsValidate: a server needs a way in; empty passwords only for
// root, only when allowed; every problem is named.
func TestOptionsValidate(t *testing.T) {
	o := Options{AllowEmptyRoot: true}
	o.EnsureDefaults()
	require.NoError(t, o.Validate())
	require.Equal(t, "127.0.0.1:3306", o.Addr)
	bad := Options{Users: map[string]string{"app": ""}, DelayRules: []DelayRule{{Digest: " ", Delay: 1}}}
	err := bad.Validate()
	require.Error(t, err)
	for _, want := range []string{`user "app" has an empty password`, "delay rule"} {
		require.Contains(t, err.Error(), want)
	}
	require.ErrorContains(t, (&Options{}).Validate(), "no users")
	require.Equal(t, `{"app":[{"Password":"pw"}],"root":[{"Password":""}]}`,
		(&Server{opts: Options{Users: map[string]string{"app": "pw"}, AllowEmptyRoot: true}}).authConfig())
}

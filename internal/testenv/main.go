package testenv

import (
	"os"
	"testing"
)

// Main runs the package's tests and then stops every server this process
// started, and every other one a stop function is given for (a package
// that also uses pgtest passes pgtest.Stop). Use it as the whole body of
// TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M, stops ...func()) {
	code := m.Run()
	stopServers()
	for _, stop := range stops {
		stop()
	}
	os.Exit(code)
}

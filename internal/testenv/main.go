package testenv

import (
	"os"
	"testing"
)

// Main runs the package's tests and then stops every server this process
// started. Use it as the whole body of TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	stopServers()
	os.Exit(code)
}

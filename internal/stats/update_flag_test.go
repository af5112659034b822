package stats

// The -update flag lives in internal/golden; importing it here lets
// 'go test ./... -update' run across every package, those without golden
// files included.
import _ "github.com/ktune/ktune/internal/golden"

package dynamodb

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/runfleet/runfleet/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newTestStore returns a Store over a fresh table of its own, dropped when
// the test ends.
func newTestStore(t *testing.T, client *ddb.Client) *Store {
	t.Helper()
	table := testenv.UniqueName(t, "store")
	if err := CreateTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(client, table) })
	return New(client, table)
}

func dropTable(client *ddb.Client, table string) {
	_, _ = client.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
}

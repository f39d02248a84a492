package dynamodb_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/dynamodb"
)

// The DynamoDB store must not list deleted instances: its indexes hold only
// live ones, so it would Scan the table. The operator API answers 501 for
// it; this test fails if someone adds the ability without deciding that.
func TestDynamoDBCannotListDeleted(t *testing.T) {
	if _, ok := any((*dynamodb.Store)(nil)).(store.DeletedLister); ok {
		t.Fatal("dynamodb.Store implements store.DeletedLister; update the operator API's 501 and this test")
	}
}

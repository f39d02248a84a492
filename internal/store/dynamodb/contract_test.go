package dynamodb

import (
	"testing"

	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/storetest"
	"github.com/runfleet/runfleet/internal/testenv"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newTestStore(t, testenv.DynamoDB(t)) })
}

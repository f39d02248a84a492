package dynamodb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// installationKey is the one item naming this installation; attrInstallation
// holds its id.
const (
	installationKey  = prefixMeta + "installation"
	attrInstallation = "installation_id"
)

// InstallationID implements store.Store. The first caller ever makes the id
// with a conditional PutItem; every other (a concurrent first caller, every
// Lambda function, a retried Put whose response was lost) finds the put
// refused and reads the winner's id. Once known it is kept in memory: it
// never changes.
func (s *Store) InstallationID(ctx context.Context) (string, error) {
	s.installation.Lock()
	defer s.installation.Unlock()
	if s.installation.id != "" {
		return s.installation.id, nil
	}
	id, err := s.readInstallationID(ctx)
	if err == nil && id == "" {
		id, err = s.makeInstallationID(ctx)
	}
	if err != nil {
		return "", err
	}
	s.installation.id = id
	return id, nil
}

// readInstallationID returns the stored id, or "" if none was made yet.
func (s *Store) readInstallationID(ctx context.Context) (string, error) {
	out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(installationKey),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", fmt.Errorf("read installation id: %w", err)
	}
	if out.Item == nil {
		return "", nil
	}
	id := stringAttr(out.Item, attrInstallation)
	if id == "" {
		return "", fmt.Errorf("read installation id: item %s has no %s", installationKey, attrInstallation)
	}
	return id, nil
}

// makeInstallationID stores a new random id unless one exists, and returns
// whichever is stored.
func (s *Store) makeInstallationID(ctx context.Context) (string, error) {
	id := requestToken()
	_, err := s.client.PutItem(ctx, &ddb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrPK:           &types.AttributeValueMemberS{Value: installationKey},
			attrInstallation: &types.AttributeValueMemberS{Value: id},
		},
		ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames:            map[string]string{"#pk": attrPK},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		if stored := stringAttr(ccf.Item, attrInstallation); stored != "" {
			return stored, nil
		}
		return s.readInstallationID(ctx)
	}
	if err != nil {
		return "", fmt.Errorf("make installation id: %w", err)
	}
	return id, nil
}

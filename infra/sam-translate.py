#!/usr/bin/env python3
"""Transform a SAM template into plain CloudFormation, offline.

    python3 infra/sam-translate.py template.yaml [out.json]

Runs aws-sam-translator (the code behind the AWS::Serverless transform) on
the template and exits non-zero on any error it reports, so that `make lint`
catches a template SAM would reject at deploy time. It needs no AWS account:
the managed-policy lookup SAM would do through IAM is answered locally.
"""

import json
import os
import sys

import yaml
from samtranslator.model.exceptions import InvalidDocumentException
from samtranslator.translator.transform import transform

# CloudFormation's short-form tags and the long form each stands for.
INTRINSICS = {
    "!Ref": "Ref",
    "!Condition": "Condition",
    "!Base64": "Fn::Base64",
    "!Cidr": "Fn::Cidr",
    "!FindInMap": "Fn::FindInMap",
    "!GetAtt": "Fn::GetAtt",
    "!GetAZs": "Fn::GetAZs",
    "!ImportValue": "Fn::ImportValue",
    "!Join": "Fn::Join",
    "!Select": "Fn::Select",
    "!Split": "Fn::Split",
    "!Sub": "Fn::Sub",
    "!Transform": "Fn::Transform",
    "!And": "Fn::And",
    "!Equals": "Fn::Equals",
    "!If": "Fn::If",
    "!Not": "Fn::Not",
    "!Or": "Fn::Or",
    "!Length": "Fn::Length",
    "!ToJsonString": "Fn::ToJsonString",
}


class CloudFormationLoader(yaml.SafeLoader):
    """A safe YAML loader that turns !Tag value into {"Fn::Tag": value}."""


def _construct_intrinsic(loader, tag_suffix, node):
    tag = "!" + tag_suffix
    name = INTRINSICS.get(tag)
    if name is None:
        raise yaml.constructor.ConstructorError(None, None, f"unknown tag {tag}", node.start_mark)
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        # !GetAtt Resource.Attribute is short for [Resource, Attribute].
        if name == "Fn::GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


CloudFormationLoader.add_multi_constructor("!", _construct_intrinsic)


def as_packaged(template):
    """Points local CodeUri paths at a placeholder S3 object, as `sam
    package` would after uploading them; the translator accepts only S3."""

    def packaged(props):
        uri = props.get("CodeUri")
        if isinstance(uri, str) and not uri.startswith("s3://"):
            props["CodeUri"] = "s3://offline-placeholder/code.zip"

    packaged(template.get("Globals", {}).get("Function", {}))
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") == "AWS::Serverless::Function":
            packaged(resource.get("Properties", {}))
    return template


class OfflinePolicyLoader:
    """Stands in for samtranslator's ManagedPolicyLoader, which lists AWS
    managed policies through IAM. The template names policies by ARN only,
    so an empty map suffices; a policy named by bare name fails loudly."""

    def load(self):
        return {}


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    # The translator fills AWS::Region and AWS::Partition from a boto3
    # session; any commercial region gives the same template.
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with open(argv[1], encoding="utf-8") as f:
        template = yaml.load(f, Loader=CloudFormationLoader)
    try:
        output = transform(as_packaged(template), {}, OfflinePolicyLoader())
    except InvalidDocumentException as e:
        for cause in e.causes:
            print(f"{argv[1]}: {cause.message}", file=sys.stderr)
        return 1
    if len(argv) == 3:
        with open(argv[2], "w", encoding="utf-8") as f:
            json.dump(output, f, indent=2, sort_keys=True)
    resources = output.get("Resources", {})
    print(f"{argv[1]}: SAM transform OK ({len(resources)} CloudFormation resources)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Source groups of the four datasets (paper 4.1, B.1): where each lives and its license.

A source is ``(format, name)``; ``mirror`` is its folder under a local mirror of the real
sources (``<format>/<folder>/...``); ``sample`` its folder in the package's
``samples/bench``; ``flags`` mark substitute groups (SWDE, readability and Wikipedia pages).

Each source also declares the words its questions use: ``fields`` a glossary
from the source's keys (a key, or a dotted suffix of a key path, ``"a.b"``) to the phrase a
person would write ("mag" -> "magnitude", "cvssMetricV31" -> "CVSS v3.1"); an empty
phrase leaves a container key out of the words, ``None`` makes the field one no question
asks (generator metadata, vendor extensions, a duplicate of another field); a key ending
in ``*`` matches every key with that prefix. ``kinds`` names each record kind as the
source's readers do (singular and plural: "CVE entry" / "CVE entries"); ``names`` are
the keys whose values are a record's natural name or id (a record described by another
value is named "the work with URL ..."). Wording only: records, specifications and the
second reader never see these words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from treeagent.pipeline.config import MODES  # declared once, with the parameter that picks one
from treeagent.registry import FORMATS as _FORMAT_RECORDS
from treeagent.registry import Registry

__all__ = ["BENCH", "FORMATS", "JS_REPOS", "MODES", "SOURCES", "Kind", "Source", "get",
           "sources_of"]


class Kind(NamedTuple):
    """How questions name one record kind.

    ``phrase``: the kind's descriptions are noun phrases that name the kind themselves
    ("query parameter "limit" of GET /pets") and are written without quotes after
    "the"; ``scope``: the plural states an aggregation's scope (false where another kind
    of the same words is counted, e.g. a described anonymous JS object among all
    object literals)."""

    singular: str
    plural: str
    phrase: bool = False
    scope: bool = True


@dataclass(frozen=True, slots=True)
class Source:
    format: str
    name: str
    license: str
    mirror: str = ""  # folder name under <mirror>/<format>/ (default: name)
    suffixes: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)
    fields: Mapping[str, str | None] = field(default_factory=dict)
    kinds: Mapping[str, Kind] = field(default_factory=dict)
    names: tuple[str, ...] = ()
    no_evidence: str = ""  # why the source's data cannot supply evidence (inventory)

    @property
    def folder(self) -> str:
        return self.mirror or self.name


_JSON = (".json", ".geojson")
_JS_LICENSE = "MIT"

#: JS repositories at the paper's pinned commits (B.1): url, commit prefix, license.
JS_REPOS: dict[str, dict[str, str]] = {
    "eslint": {"url": "https://github.com/eslint/eslint", "commit": "6ddf8587e5cf"},
    "webpack": {"url": "https://github.com/webpack/webpack", "commit": "2043f6e66e87"},
    "threejs": {"url": "https://github.com/mrdoob/three.js", "commit": "27e70ddf91e9"},
    "plotly": {"url": "https://github.com/plotly/plotly.js", "commit": "0af79ccbd45f"},
    "babel": {"url": "https://github.com/babel/babel", "commit": "86b96c84eef3"},
    "lodash": {"url": "https://github.com/lodash/lodash", "commit": "a666ba591064"},
}

# ------------------------------------------------------------------ vocabulary

#: Words spelled as acronyms wherever a key is read as words without a glossary phrase.
ACRONYMS: dict[str, str] = {w.lower(): w for w in (
    "ID IDs URL URI DOI ISSN ISBN NCT FDA QC IPD DMC PI CFDA NAICS PSC UEI DUNS SAI IUCN "
    "GBIF CVSS CVE CWE API HTTP HTTPS JSON XML HTML CSS UTC OCID CPV SME VCSE RMS ORCID "
    "SQL DNA PMID").split()}

_USGS_FIELDS: dict[str, str | None] = {
    "mag": "magnitude", "magType": "magnitude type", "place": "place", "time": "origin time",
    "updated": "update time", "tz": "time zone in minutes", "url": "event page URL",
    "felt": "number of felt reports", "cdi": "community intensity",
    "mmi": "instrumental intensity", "alert": "alert level", "status": "review status",
    "tsunami": "tsunami flag", "sig": "significance", "net": "network", "code": "event code",
    "nst": "number of stations", "dmin": "minimum distance", "rms": "RMS residual",
    "gap": "azimuthal gap", "type": "event type", "title": "title", "properties": "",
    "event id": "event ID",
}

_NVD_FIELDS: dict[str, str | None] = {
    # NVD 1.1 feeds (CVE_Items) and the 2.0 API (vulnerabilities[].cve)
    "cve": "", "CVE_data_meta": "", "CVE_data_meta.ID": "CVE ID", "id": "CVE ID",
    "CVE_data_meta.ASSIGNER": "assigner", "data_type": None, "data_format": None,
    "data_version": None, "description_data": None, "lang": None,
    "publishedDate": "publication date", "published": "publication date",
    "lastModifiedDate": "modification date", "lastModified": "modification date",
    "vulnStatus": "vulnerability status", "sourceIdentifier": "source identifier",
    "impact": "", "metrics": "", "cvssV3": "", "cvssV2": "", "cvssData": "",
    "baseMetricV3": "CVSS v3", "baseMetricV2": "CVSS v2", "cvssMetricV2": "CVSS v2",
    "cvssMetricV30": "CVSS v3.0", "cvssMetricV31": "CVSS v3.1", "cvssMetricV40": "CVSS v4.0",
    "acInsufInfo": "insufficient information flag",
    "obtainAllPrivilege": "obtains all privileges flag",
    "obtainUserPrivilege": "obtains user privileges flag",
    "obtainOtherPrivilege": "obtains other privileges flag",
    "userInteractionRequired": "user interaction required flag", "type": "score type",
    "source": "score source", "version": None, "vectorString": "vector string",
    "baseScore": "base score", "baseSeverity": "base severity",
    "evaluatorComment": "evaluator comment", "evaluatorImpact": "evaluator impact",
    "evaluatorSolution": "evaluator solution", "cisaExploitAdd": "CISA exploit date",
    "cisaActionDue": "CISA action due date", "cisaRequiredAction": "CISA required action",
    "cisaVulnerabilityName": "CISA vulnerability name",
}

_CT_CONTAINERS = (
    "protocolSection identificationModule statusModule sponsorCollaboratorsModule "
    "oversightModule descriptionModule conditionsModule designModule armsInterventionsModule "
    "outcomesModule eligibilityModule contactsLocationsModule referencesModule "
    "ipdSharingStatementModule designInfo expandedAccessInfo maskingInfo "
    "ProtocolSection IdentificationModule StatusModule SponsorCollaboratorsModule "
    "OversightModule DescriptionModule ConditionsModule DesignModule ArmsInterventionsModule "
    "OutcomesModule EligibilityModule ContactsLocationsModule ReferencesModule "
    "IPDSharingStatementModule DesignInfo ExpandedAccessInfo DesignMaskingInfo EnrollmentInfo "
    "OrgStudyIdInfo Organization ResponsibleParty LeadSponsor StartDateStruct "
    "PrimaryCompletionDateStruct CompletionDateStruct StudyFirstPostDateStruct "
    "LastUpdatePostDateStruct ResultsFirstPostDateStruct ConditionList Condition LocationList "
    "Location InterventionList Intervention PrimaryOutcomeList PrimaryOutcome "
    "SecondaryOutcomeList SecondaryOutcome OverallOfficialList OverallOfficial PhaseList "
    "DesignObservationalModelList DesignTimePerspectiveList InterventionArmGroupLabelList "
    "ArmGroupList ArmGroup SecondaryIdInfoList SecondaryIdInfo KeywordList StdAgeList "
    "CollaboratorList Collaborator").split()
_CT_FIELDS: dict[str, str | None] = {
    **{k: "" for k in _CT_CONTAINERS},
    "nctId": "NCT number", "NCTId": "NCT number",
    "orgStudyIdInfo.id": "organization's study ID", "OrgStudyId": "organization's study ID",
    "organization.fullName": "organization name", "OrgFullName": "organization name",
    "organization.class": "organization class", "OrgClass": "organization class",
    "briefTitle": "brief title", "BriefTitle": "brief title",
    "officialTitle": "official title", "OfficialTitle": "official title",
    "acronym": "acronym", "Acronym": "acronym",
    "statusVerifiedDate": "status verification date",
    "StatusVerifiedDate": "status verification date",
    "overallStatus": "overall status", "OverallStatus": "overall status",
    "hasExpandedAccess": "expanded access flag",
    "HasExpandedAccess": "expanded access flag",
    "startDateStruct.date": "start date", "StartDate": "start date",
    "startDateStruct.type": "start date type", "StartDateType": "start date type",
    "primaryCompletionDateStruct.date": "primary completion date",
    "PrimaryCompletionDate": "primary completion date",
    "primaryCompletionDateStruct.type": "primary completion date type",
    "PrimaryCompletionDateType": "primary completion date type",
    "completionDateStruct.date": "completion date", "CompletionDate": "completion date",
    "completionDateStruct.type": "completion date type",
    "CompletionDateType": "completion date type",
    "studyFirstSubmitDate": "initial submission date",
    "StudyFirstSubmitDate": "initial submission date",
    "studyFirstSubmitQcDate": "initial QC submission date",
    "StudyFirstSubmitQCDate": "initial QC submission date",
    "studyFirstPostDateStruct.date": "initial posting date",
    "StudyFirstPostDate": "initial posting date",
    "studyFirstPostDateStruct.type": "initial posting date type",
    "StudyFirstPostDateType": "initial posting date type",
    "lastUpdateSubmitDate": "latest update submission date",
    "LastUpdateSubmitDate": "latest update submission date",
    "lastUpdatePostDateStruct.date": "latest update posted date",
    "LastUpdatePostDate": "latest update posted date",
    "lastUpdatePostDateStruct.type": "latest update posted date type",
    "LastUpdatePostDateType": "latest update posted date type",
    "resultsFirstSubmitDate": "results submission date",
    "ResultsFirstSubmitDate": "results submission date",
    "resultsFirstSubmitQcDate": "results QC submission date",
    "ResultsFirstSubmitQCDate": "results QC submission date",
    "resultsFirstPostDateStruct.date": "results posted date",
    "ResultsFirstPostDate": "results posted date",
    "resultsFirstPostDateStruct.type": "results posted date type",
    "ResultsFirstPostDateType": "results posted date type",
    "responsibleParty.type": "responsible party type",
    "ResponsiblePartyType": "responsible party type",
    "investigatorFullName": "responsible investigator",
    "ResponsiblePartyInvestigatorFullName": "responsible investigator",
    "investigatorTitle": "responsible investigator's title",
    "ResponsiblePartyInvestigatorTitle": "responsible investigator's title",
    "investigatorAffiliation": "responsible investigator's affiliation",
    "ResponsiblePartyInvestigatorAffiliation": "responsible investigator's affiliation",
    "leadSponsor.name": "lead sponsor", "LeadSponsorName": "lead sponsor",
    "leadSponsor.class": "lead sponsor class", "LeadSponsorClass": "lead sponsor class",
    "oversightHasDmc": "data monitoring committee flag",
    "OversightHasDMC": "data monitoring committee flag",
    "isFdaRegulatedDrug": "FDA-regulated drug flag",
    "IsFDARegulatedDrug": "FDA-regulated drug flag",
    "isFdaRegulatedDevice": "FDA-regulated device flag",
    "IsFDARegulatedDevice": "FDA-regulated device flag", "isUsExport": "US export flag",
    "IsUSExport": "US export flag", "studyType": "study type", "StudyType": "study type",
    "enrollmentInfo.count": "enrollment count", "EnrollmentCount": "enrollment count",
    "enrollmentInfo.type": "enrollment type", "EnrollmentType": "enrollment type",
    "sex": "sex", "Gender": "sex", "healthyVolunteers": "healthy volunteers flag",
    "HealthyVolunteers": "healthy volunteers flag", "minimumAge": "minimum age",
    "MinimumAge": "minimum age", "maximumAge": "maximum age", "MaximumAge": "maximum age",
    "stdAges": "age group", "StdAge": "age group",
    "allocation": "allocation", "DesignAllocation": "allocation",
    "interventionModel": "intervention model", "DesignInterventionModel": "intervention model",
    "interventionModelDescription": "intervention model description",
    "DesignInterventionModelDescription": "intervention model description",
    "primaryPurpose": "primary purpose", "DesignPrimaryPurpose": "primary purpose",
    "masking": "masking", "DesignMasking": "masking",
    "observationalModel": "observational model",
    "DesignObservationalModel": "observational model",
    "timePerspective": "time perspective", "DesignTimePerspective": "time perspective",
    "phases": "phase", "Phase": "phase", "conditions": "condition", "Condition": "condition",
    "keywords": "keyword", "Keyword": "keyword",
    "locations": "site", "LocationCity": "site city", "LocationCountry": "site country",
    "LocationFacility": "site facility", "LocationZip": "site ZIP code",
    "LocationState": "site state", "LocationStatus": "site status", "zip": "ZIP code",
    "interventions": "intervention", "InterventionType": "intervention type",
    "InterventionName": "intervention name",
    "InterventionDescription": "intervention description",
    "armGroupLabels": "intervention arm", "InterventionArmGroupLabel": "intervention arm",
    "primaryOutcomes": "primary outcome", "secondaryOutcomes": "secondary outcome",
    "PrimaryOutcomeMeasure": "primary outcome measure",
    "PrimaryOutcomeTimeFrame": "primary outcome time frame",
    "PrimaryOutcomeDescription": "primary outcome description",
    "SecondaryOutcomeMeasure": "secondary outcome measure",
    "SecondaryOutcomeTimeFrame": "secondary outcome time frame",
    "SecondaryOutcomeDescription": "secondary outcome description",
    "timeFrame": "time frame",
    "overallOfficials": "overall official", "overallOfficials.name": "overall official",
    "OverallOfficialName": "overall official",
    "OverallOfficialAffiliation": "overall official's affiliation",
    "OverallOfficialRole": "overall official's role",
    "ipdSharing": "IPD sharing", "IPDSharing": "IPD sharing",
    "samplingMethod": "sampling method", "SamplingMethod": "sampling method",
    "studyPopulation": "study population", "StudyPopulation": "study population",
    "patientRegistry": "patient registry flag", "PatientRegistry": "patient registry flag",
    "secondaryIdInfos": "secondary ID", "secondaryIdInfos.id": "secondary ID",
    "SecondaryId": "secondary ID", "SecondaryIdType": "secondary ID type",
    "SecondaryIdDomain": "secondary ID domain", "domain": "domain",
    "armGroups": "arm", "ArmGroupLabel": "arm label", "ArmGroupType": "arm type",
    "ArmGroupDescription": "arm description", "interventionNames": "intervention",
    "ArmGroupInterventionName": "arm intervention", "hasResults": "results posted flag",
    "collaborators": "collaborator", "CollaboratorName": "collaborator",
    "CollaboratorClass": "collaborator class", "conditionsModule.keywords": "keyword",
    "briefSummary": "brief summary", "BriefSummary": "brief summary",
}

_CROSSREF_FIELDS: dict[str, str | None] = {
    "DOI": "DOI", "URL": "URL", "reference-count": "number of references",
    "references-count": None, "is-referenced-by-count": "citation count",
    "publisher": "publisher", "type": "work type", "prefix": "DOI prefix",
    "member": "Crossref member ID", "score": "relevance score", "resource": "",
    "resource.primary.URL": "primary URL", "source": "metadata source", "title": "title",
    "container-title": "journal or book name",
    "short-container-title": "abbreviated journal name", "page": "page range",
    "language": "language", "volume": "volume", "ISSN": "ISSN", "issn-type.value": None,
    "issn-type.type": "ISSN type", "isbn-type.value": None, "isbn-type.type": "ISBN type",
    "ISBN": "ISBN", "alternative-id": "alternative ID", "journal-issue": "journal issue",
    "journal-issue.issue": "issue", "update-policy": "update policy URL",
    "article-number": "article number", "issued.date-parts": "year issued",
    "published.date-parts": "publication year",
    "published-print.date-parts": "print publication year",
    "published-online.date-parts": "online publication year",
    "published-other.date-parts": "other publication year",
    "posted.date-parts": "posting year", "approved.date-parts": "approval year",
    "accepted.date-parts": "acceptance year",
    "journal-issue.published-print.date-parts": "issue print year",
    "journal-issue.published-online.date-parts": "issue online year",
    "special_numbering": "special numbering", "publisher-location": "publisher location",
    "archive": "archive", "event.name": "event name", "event.location": "event location",
    "event.acronym": "event acronym", "group-title": "group title", "subtype": "subtype",
    "subtitle": "subtitle", "edition-number": "edition number", "version.version": "version",
    "updated-by.DOI": "updating DOI", "updated-by.type": "update type",
    "updated-by.label": "update label", "updated-by.source": "update source",
    "updated-by.updated.date-time": "update time", "updated-by.updated.timestamp": None,
    "short-title": "short title", "original-title": "original title", "degree": "degree",
}

_GBIF_FIELDS: dict[str, str | None] = {
    "key": "occurrence key", "gbifID": "GBIF ID", "datasetKey": "dataset key",
    "publishingOrgKey": "publishing organization key", "protocol": "publishing protocol",
    "lastCrawled": "crawl date", "lastParsed": "parse date",
    "lastInterpreted": "interpretation date", "crawlId": "crawl ID",
    "isSequenced": "sequenced flag", "isInCluster": "clustered flag",
    "publishedByGbifRegion": "publisher's GBIF region", "gbifRegion": "GBIF region",
    "iucnRedListCategory": "IUCN Red List category", "recordedBy": "recorder",
    "identifiedBy": "determiner", "decimalLatitude": "latitude",
    "decimalLongitude": "longitude", "modified": "modification date",
    "stateProvince": "state or province", "recordedByIDs": "recorder ID",
    "recordedByIDs.value": "recorder ID", "recordedByIDs.type": "recorder ID type",
    "identifiedByIDs": "determiner ID", "identifiedByIDs.value": "determiner ID",
    "identifiedByIDs.type": "determiner ID type", "networkKeys": "network key",
    "issues": "interpretation issue", "type": "record type",
    "references": "record page URL", "occurrenceID": "occurrence ID",
    "catalogNumber": "catalog number", "taxonID": "taxon ID",
    "http://unknown.org/nick": "nickname", "http://unknown.org/captive": "captive",
    "http://unknown.org/recordID": "record ID",
    "http://unknown.org/recordEnteredBy": "record entered by",
    "http://unknown.org/taxonRankID": "taxon rank ID",
}

_NIH_FIELDS: dict[str, str | None] = {
    "fiscal_year": "fiscal year", "project_num": "project number",
    "award_amount": "award amount", "project_start_date": "project start date",
    "project_end_date": "project end date", "project_title": "title",
    "budget_start": "budget start date", "budget_end": "budget end date",
    "contact_pi_name": "contact principal investigator", "appl_id": "application ID",
    "organization": "", "org_name": "organization", "org_city": "organization city",
    "org_state": "organization state", "org_country": "organization country",
    "agency_ic_admin": "", "agency_ic_admin.name": "administering institute",
    "activity_code": "activity code", "is_active": "active flag", "core_project_num":
    "core project number", "opportunity_number": "funding opportunity number",
    "direct_cost_amt": "direct cost", "indirect_cost_amt": "indirect cost",
}

_CONTRACTS_FIELDS: dict[str, str | None] = {
    "ocid": "OCID", "id": "release ID", "date": "release date", "tag": "release tag",
    "initiationType": "initiation type", "tender": "", "tender.id": "tender ID",
    "title": "title", "description": "description", "status": "status",
    "value.amount": "value", "value.currency": "currency", "minValue.amount": "minimum value",
    "procurementMethod": "procurement method",
    "procurementMethodDetails": "procurement method details",
    "mainProcurementCategory": "procurement category",
    "tenderPeriod.startDate": "tender start date", "tenderPeriod.endDate": "tender deadline",
    "contractPeriod.startDate": "contract start date",
    "contractPeriod.endDate": "contract end date", "buyer.name": "buyer",
    "buyer.id": "buyer ID", "suitability.sme": "SME suitability flag",
    "suitability.vcse": "VCSE suitability flag", "language": "language",
    "classification.id": "CPV code", "classification.description": "CPV description",
}

_USASPENDING_FIELDS: dict[str, str | None] = {
    "Award ID": "award ID", "award_id": "award ID",
    "generated_unique_award_id": "unique award key", "internal_id": "internal ID",
    "generated_internal_id": "internal award ID",
    "prime_award_generated_internal_id": "prime award internal ID",
    "Recipient Name": "recipient", "recipient_name": "recipient",
    "recipient_id": "recipient ID", "uei": "UEI", "duns": "DUNS number",
    "recipient_level": "recipient level",
    "Last Modified Date": "modification date", "last_modified_date": "modification date", "parents": "parent",
    "parents.parent_duns": "parent DUNS number", "parents.parent_name": "parent recipient",
    "parents.parent_id": "parent recipient ID", "parents.parent_uei": "parent UEI",
    "location": "", "address_line1": "address line 1", "address_line2": "address line 2",
    "location_country_code": "country code", "zip4": "ZIP code extension", "zip5": "ZIP code",
    "zip": "ZIP code", "congressional_code": "congressional district",
    "COVID-19 Obligations": "COVID-19 obligated amount",
    "COVID-19 Outlays": "COVID-19 outlay amount",
    "def_codes": "disaster emergency fund code", "agency_slug": None,
    "funding_agency_slug": None, "awarding_agency_slug": None, "slug": None,
    "icon_filename": None, "has_agency_page": None, "toptier_code": "toptier agency code",
    "agency_id": "agency ID", "subtier_agency_count": "number of subtier agencies",
    "new_award_count": "number of new awards", "transaction_count": "number of transactions",
    "congressional_justification_url": "congressional justification URL",
    "Sub-Award ID": "subaward ID", "Sub-Award Amount": "subaward amount",
    "Sub-Award Date": "subaward date", "Sub-Award Type": "subaward type",
    "Sub-Awardee Name": "subawardee", "Sub-Recipient Location": "subrecipient location",
    "Sub-Recipient UEI": "subrecipient UEI",
    "Sub-Award Primary Place of Performance": "subaward place of performance",
    "Primary Place of Performance": "place of performance",
    "Prime Award ID": "prime award ID", "Prime Recipient Name": "prime recipient",
    "Prime Award Recipient UEI": "prime recipient UEI",
    "prime_award_recipient_id": "prime recipient ID",
    "sub_award_recipient_id": "subrecipient ID", "is_quarterly_submission":
    "quarterly submission flag", "latest_transaction_contract_data": "",
    "fed_biz_opps": "federal business opportunities code",
    "fed_biz_opps_description": "federal business opportunities description",
    "type_set_aside": "set-aside type", "type_set_aside_description":
    "set-aside description", "total_outlays": "total outlay amount",
    "funding_toptier_agency_id": "funding toptier agency ID",
    "awarding_toptier_agency_id": "awarding toptier agency ID",
    "primary_assistance_listing": "", "cfda_number": "CFDA number",
    "cfda_program_title": "CFDA program title",
}

_YAML_FIELDS: dict[str, str | None] = {
    "method": "HTTP method", "in": "location", "schema": "", "type": "data type",
    "format": "data format", "default": "default value", "minimum": "minimum value",
    "maximum": "maximum value", "minLength": "minimum length", "maxLength": "maximum length",
    "minItems": "minimum number of items", "maxItems": "maximum number of items",
    "items": "item", "items.type": "item type", "items.format": "item format",
    "items.default": "item default value", "items.pattern": "item pattern",
    "items.minimum": "item minimum value", "items.maximum": "item maximum value",
    "items.minLength": "item minimum length", "items.maxLength": "item maximum length",
    "uniqueItems": "unique items flag", "exclusiveMinimum": "exclusive minimum",
    "exclusiveMaximum": "exclusive maximum", "enum": "allowed value",
    "collectionFormat": "collection format", "allowEmptyValue": "allows empty value flag",
    "allowReserved": "allows reserved characters flag", "operationId": "operation ID",
    "operation id": "operation ID", "tags": "tag", "produces": "response media type",
    "consumes": "accepted media type", "externalDocs": "external documentation",
    "externalDocs.url": "external documentation URL", "schema.title": "type title",
    "schema.description": None, "security": None, "servers": None,
    "x-*": None, "$ref": None, "properties": None, "allOf": None, "anyOf": None,
    "oneOf": None, "additionalProperties": None, "example": None, "examples": None,
    "discriminator": None, "xml": None,
}

_JS_FIELDS: dict[str, str | None] = {
    "ecmaVersion": "ECMAScript version", "sourceType": "source type",
    "messageId": "message ID", "parserOptions": "", "languageOptions": "",
    "endLine": "end line", "endColumn": "end column", "ruleId": "rule ID",
    # a test case's expected error (ESLint RuleTester `errors: [{...}]`), asked of the test case
    "errors.messageId": "error message ID", "errors.message": "error message",
    "errors.type": "error node type", "errors.line": "error line",
    "errors.column": "error column", "errors.endLine": "error end line",
    "errors.endColumn": "error end column",
    "replaces": "replaced plugin",  # Babel's compat data: the plugin a bugfix plugin replaces
}

_KINDS_JSON: dict[str, dict[str, Kind]] = {
    "usgs": {"earthquake event": Kind("earthquake event", "earthquake events")},
    "nvd": {"vulnerability": Kind("CVE entry", "CVE entries")},
    "nih_reporter": {"research project": Kind("project", "projects")},
    "clinicaltrials": {"clinical study": Kind("study", "studies")},
    "gbif": {"species occurrence": Kind("occurrence", "occurrences")},
    "crossref": {"scholarly work": Kind("work", "works")},
    "contracts_finder": {"procurement notice": Kind("notice", "notices")},
    "usaspending": {"federal award": Kind("award", "awards"),
                    "award recipient": Kind("recipient", "recipients"),
                    "federal agency": Kind("agency", "agencies"),
                    "spending record": Kind("spending record", "spending records")},
}
_VOCAB_JSON: dict[str, dict] = {
    "usgs": {"fields": _USGS_FIELDS, "names": ("title", "place", "id")},
    "nvd": {"fields": _NVD_FIELDS, "names": ("ID", "id")},
    "nih_reporter": {"fields": _NIH_FIELDS,
                     "names": ("project_num", "appl_id", "project_title")},
    "clinicaltrials": {"fields": _CT_FIELDS,
                       "names": ("nctId", "NCTId", "briefTitle", "BriefTitle")},
    "gbif": {"fields": _GBIF_FIELDS,
             "names": ("occurrenceID", "catalogNumber", "gbifID", "key", "references",
                       "identifier", "http://unknown.org/recordID")},
    "crossref": {"fields": _CROSSREF_FIELDS, "names": ("DOI", "title", "URL")},
    "contracts_finder": {"fields": _CONTRACTS_FIELDS, "names": ("ocid", "title", "id")},
    "usaspending": {"fields": _USASPENDING_FIELDS,
                    "names": ("Award ID", "award_id", "generated_unique_award_id", "piid",
                              "fain", "name", "recipient_name", "Recipient Name",
                              "recipient_id", "id", "code", "account_title",
                              "sub_award_recipient_id", "Sub-Award ID")},
}
_KINDS_HTML = {
    "table row": Kind("table row", "table rows"), "specification table": Kind("table", "tables"),
    "term": Kind("term", "terms"), "list item": Kind("list item", "list items"),
}
_HTML_FIELDS: dict[str, str | None] = {  # page labels that are verbs, named as a reader would
    "founded": "founding date", "established": "founding date", "born": "date of birth",
    "died": "date of death", "released": "release date", "published": "publication date",
    "launched": "launch date", "opened": "opening date", "created": "creation date",
    "updated": "update date", "introduced": "introduction date",
    "discontinued": "discontinuation date", "completed": "completion date",
    # abbreviated headers of sports and results tables, spelled out
    "pos": "place", "pts": "points", "yds": "yards", "pld": "matches played",
    "apps": "appearances", "gp": "games played", "gf": "goals for", "ga": "goals against",
    "gd": "goal difference", "att": "attempts", "avg": "average", "no": "number",
}
_KINDS_YAML = {
    "API path": Kind("API path", "API paths"), "operation": Kind("API operation", "API operations"),
    "parameter": Kind("parameter", "parameters", phrase=True),
    "response": Kind("response", "responses", phrase=True),
}
_KINDS_JS = {
    "object": Kind("object literal", "object literals"),
    "object literal": Kind("object", "objects", scope=False),
    "settings object": Kind("object", "objects", scope=False),
    "entry": Kind("array entry", "array entries"), "member": Kind("property", "properties"),
    "valid entry": Kind("valid test case", "valid test cases"),
    "invalid entry": Kind("invalid test case", "invalid test cases"),
    "error entry": Kind("expected error", "expected errors"),
}
_JS_NAMES = ("name", "id", "title", "key", "label", "@key:-1")

SOURCES: dict[tuple[str, str], Source] = {
    (s.format, s.name): s
    for s in (
        *(Source("json", name, lic, suffixes=_JSON, kinds=_KINDS_JSON[name],
                 **_VOCAB_JSON[name]) for name, lic in (
            ("usgs", "US public domain (USGS ComCat)"),
            ("nvd", "US public domain (NIST NVD)"),
            ("nih_reporter", "US government public data (NIH RePORTER)"),
            ("clinicaltrials", "ClinicalTrials.gov public data (NLM)"),
            ("gbif", "per-record license (CC0 / CC BY 4.0 / CC BY-NC 4.0)"),
            ("crossref", "Crossref metadata: facts / CC0 (abstracts may be publisher "
                         "copyright)"),
            ("contracts_finder", "Open Government Licence v3.0 (UK Contracts Finder)"),
            ("usaspending", "US public domain (USAspending)"))),
        Source("html", "websrc", "CC BY 4.0 as declared for WebSRC; pages via "
               "X-LANCE/WebSRC-Baseline (MIT)", mirror="websrc-v1.0-sample",
               suffixes=(".html", ".htm"), fields=_HTML_FIELDS, kinds=_KINDS_HTML,
               names=("@term", "@text")),
        Source("html", "swde", "research use, no explicit license (SWDE book vertical)",
               mirror="swde-book-subset", suffixes=(".html", ".htm"), flags=("substitute",),
               fields=_HTML_FIELDS, kinds=_KINDS_HTML, names=("@term", "@text"),
               no_evidence="its book pages hold list items, whose one text is their own "
               "name, and label/value DOM blocks, which have no reader-level address: no "
               "record a lookup can ask; only a count over list items can use them"),
        Source("html", "readability", "publishers' content; mozilla/readability fixtures "
               "(Apache-2.0)", mirror="mozilla-readability-test-pages",
               suffixes=(".html", ".htm"), flags=("substitute",), fields=_HTML_FIELDS,
               kinds=_KINDS_HTML, names=("@term", "@text")),
        Source("html", "wikitables", "CC BY-SA 4.0 (Wikipedia article pages saved by "
               "WikiTableQuestions)", mirror="wikitablequestions-pages",
               suffixes=(".html", ".htm"), flags=("substitute",), fields=_HTML_FIELDS,
               kinds=_KINDS_HTML, names=("@term", "@text")),
        Source("yaml", "apis-guru", "CC0 1.0 (APIs.guru directory); per-document info.license",
               mirror="apis-guru-openapi-directory", suffixes=(".yaml", ".yml"),
               fields=_YAML_FIELDS, kinds=_KINDS_YAML, names=("operationId", "@key:-1")),
        *(Source("javascript", name, _JS_LICENSE, suffixes=(".js", ".mjs", ".cjs"),
                 extra=spec, fields=_JS_FIELDS, kinds=_KINDS_JS, names=_JS_NAMES)
          for name, spec in JS_REPOS.items()),
        Source("javascript", "treeagent", "MIT (original sample written for treeagent)",
               suffixes=(".js", ".mjs", ".cjs"), extra={"sample_only": True},
               fields=_JS_FIELDS, kinds=_KINDS_JS, names=_JS_NAMES),
    )
}

FORMATS = _FORMAT_RECORDS.builtin_names
"""The formats with sources: the paper's four (a live view of :mod:`treeagent.registry`)."""

BENCH: Registry = Registry("bench format", {
    "json": "treeagent.bench.sources.json_records:BENCH",
    "html": "treeagent.bench.sources.html_records:BENCH",
    "yaml": "treeagent.bench.sources.yaml_records:BENCH",
    "javascript": "treeagent.bench.sources.js_records:BENCH",
}, group="treeagent.bench")
"""Each format's benchmark hooks (:class:`treeagent.bench.model.BenchFormat`: record
extraction, context framing, raw checks), declared in its bench module; a plug-in format
adds its own through the entry point group ``treeagent.bench``."""


def sources_of(fmt: str, names: list[str] | tuple[str, ...] | None = None) -> list[Source]:
    """The sources of ``fmt`` (all, or those named), in registry order; a plug-in
    format's are those its bench hooks declare (``BenchFormat.sources``)."""
    if fmt not in FORMATS and fmt not in BENCH:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(BENCH.names)})")
    found = ([s for (f, _), s in SOURCES.items() if f == fmt] if fmt in FORMATS
             else list(BENCH.get(fmt).sources))
    if names is None:
        return found
    known = {s.name for s in found}
    return [s for s in found if s.name in set(names)] if set(names) & known else []


def get(fmt: str, name: str) -> Source:
    found = [s for s in sources_of(fmt) if s.name == name] if fmt in BENCH else []
    if not found:
        raise ValueError(f"unknown source {fmt}/{name}")
    return found[0]

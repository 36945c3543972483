// Alerts and a workbook over the replication metrics in Application Insights (customMetrics:
// the Azure Monitor OpenTelemetry exporter writes an instrument's name unchanged, e.g.
// 'replication.lag', and its attributes as customDimensions keys, e.g. 'replication.task').
// Thresholds come from the topology's monitoring section, rendered into the monitoring
// parameter by `python -m replication render bicep-params`. infra/README.md explains each rule.
//
// customMetrics holds pre-aggregated points (value/valueSum, valueCount, valueMin, valueMax),
// not samples, so a percentile of replication.lag cannot be computed: the lag rule uses the
// largest lag of the window (max of valueMax), a pessimistic stand-in for p95/p100.
param location string

@description('Resource id of the Application Insights component the Function app reports to.')
param insightsId string

@description('lagThresholdSeconds, heartbeatMaxAgeSeconds, parkedThreshold, failureWindow (ISO-8601), alertsEnabled, actionGroupEmails: rendered from the topology.')
param monitoring object

@description('Resource id of an existing action group to notify, in addition to (or instead of) the e-mail addresses of the topology.')
param actionGroupId string = ''

param namePrefix string

var emails = monitoring.actionGroupEmails
var createActionGroup = !empty(emails)
var failureWindowMinutes = {
  PT5M: 5
  PT10M: 10
  PT15M: 15
  PT30M: 30
  PT45M: 45
  PT1H: 60
  PT2H: 120
  PT3H: 180
  PT4H: 240
  PT5H: 300
  PT6H: 360
  P1D: 1440
  P2D: 2880
}
var failurePeriods = contains(failureWindowMinutes, monitoring.failureWindow) ? failureWindowMinutes[monitoring.failureWindow] / 5 : 3

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = if (createActionGroup) {
  name: 'ag-${namePrefix}'
  location: 'Global'
  properties: {
    groupShortName: take('repl-alerts', 12)
    enabled: true
    emailReceivers: [for (email, index) in emails: {
      name: 'email-${index}'
      emailAddress: email
      useCommonAlertSchema: true
    }]
  }
}

var actionGroups = concat(createActionGroup ? [actionGroup.id] : [], empty(actionGroupId) ? [] : [actionGroupId])

var taskDimension = [
  {
    name: 'task'
    operator: 'Include'
    values: [
      '*'
    ]
  }
]

var lagQuery = 'customMetrics | where name == "replication.lag" | extend task = tostring(customDimensions["replication.task"]), target = tostring(customDimensions["replication.target"]) | summarize maxLagSeconds = max(valueMax), averageLagSeconds = sum(valueSum) / sum(valueCount) by task, target | where maxLagSeconds > ${monitoring.lagThresholdSeconds}'
var parkedQuery = 'customMetrics | where name == "replication.messages" | where tostring(customDimensions["replication.outcome"]) == "dead_lettered" | extend task = tostring(customDimensions["replication.task"]), reason = tostring(customDimensions["replication.reason"]) | summarize parked = sum(valueSum) by task, reason | where parked > ${monitoring.parkedThreshold}'
var failureQuery = 'customMetrics | where name == "replication.send.failures" | extend task = tostring(customDimensions["replication.task"]), target = tostring(customDimensions["replication.target"]) | summarize failures = sum(valueSum) by task, target, bin(timestamp, 5m) | where failures > 0 | summarize failingPeriods = count(), failures = sum(failures) by task, target | where failingPeriods >= ${failurePeriods}'
var heartbeatQuery = 'customMetrics | where name == "replication.heartbeat.age" | extend origin = tostring(customDimensions["replication.origin"]), target = tostring(customDimensions["replication.target"]) | summarize arg_max(timestamp, value) by origin, target | extend ageSeconds = value + datetime_diff("second", now(), timestamp) | where ageSeconds > ${monitoring.heartbeatMaxAgeSeconds}'

var rules = [
  {
    name: 'lag'
    severity: 2
    query: lagQuery
    dimensions: taskDimension
    displayName: 'Replication lag above ${monitoring.lagThresholdSeconds} s'
    description: 'A task took more than ${monitoring.lagThresholdSeconds} s from the source\'s enqueue to the target\'s acknowledgement for some message in the window (largest replication.lag; customMetrics holds no percentiles). The target is throttling or down, or the task is failing and retrying: look at send failures and the task\'s logs.'
  }
  {
    name: 'parked'
    severity: 1
    query: parkedQuery
    dimensions: taskDimension
    displayName: 'Messages parked (dead-lettered) above ${monitoring.parkedThreshold}'
    description: 'A task parked more than ${monitoring.parkedThreshold} messages in its deadLetterTarget (replication.messages with outcome dead_lettered): they were not replicated. Inspect the parking queue (DeadLetterReason), fix the cause, then `python -m replication redrive --task NAME --from parked`.'
  }
  {
    name: 'send-failures'
    severity: 2
    query: failureQuery
    dimensions: taskDimension
    displayName: 'Sustained send failures'
    description: 'A task failed to send to a target in each 5-minute period of ${monitoring.failureWindow} (replication.send.failures). Messages wait on the source and are retried; error.type tells throttling, authorization or an outage apart.'
  }
  {
    name: 'heartbeat'
    severity: 1
    query: heartbeatQuery
    dimensions: [
      {
        name: 'origin'
        operator: 'Include'
        values: [
          '*'
        ]
      }
      {
        name: 'target'
        operator: 'Include'
        values: [
          '*'
        ]
      }
    ]
    displayName: 'Replication heartbeat older than ${monitoring.heartbeatMaxAgeSeconds} s'
    description: 'The newest heartbeat that crossed a replication path is older than ${monitoring.heartbeatMaxAgeSeconds} s (replication.heartbeat.age): the path is silent. The replicator is down or the target unreachable; compare with lag and send failures.'
  }
]

resource alerts 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = [for rule in rules: {
  name: 'alert-${namePrefix}-${rule.name}'
  location: location
  kind: 'LogAlert'
  properties: {
    displayName: rule.displayName
    description: rule.description
    severity: rule.severity
    enabled: monitoring.alertsEnabled
    scopes: [
      insightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: monitoring.failureWindow
    criteria: {
      allOf: [
        {
          query: rule.query
          timeAggregation: 'Count'
          operator: 'GreaterThan'
          threshold: 0
          dimensions: rule.dimensions
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroups
    }
  }
}]

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, insightsId, 'replication-workbook')
  location: location
  kind: 'shared'
  properties: {
    displayName: 'Replication (${namePrefix})'
    category: 'workbook'
    sourceId: insightsId
    serializedData: loadTextContent('../workbook.json')
  }
}

output alertNames array = [for (rule, index) in rules: alerts[index].name]

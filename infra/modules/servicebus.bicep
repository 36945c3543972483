// One Service Bus namespace with its queues, topics, subscriptions and rules, as rendered into
// infra/main.parameters.json by `python -m replication render bicep-params` (flat arrays,
// because Bicep cannot nest resource loops).
@description('Namespace: name, location, sku, queues, topics, subscriptions, rules.')
param namespace object

@description('Resource id of the Log Analytics workspace that receives the resource logs and metrics.')
param logAnalyticsWorkspaceId string

resource serviceBus 'Microsoft.ServiceBus/namespaces@2024-01-01' = {
  name: namespace.name
  location: namespace.location
  sku: {
    name: namespace.sku
    tier: namespace.sku
  }
  properties: {
    // Entra ID only: the Function app authenticates with its managed identity, no SAS keys.
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
  }
}

resource queues 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' = [for queue in namespace.queues: {
  parent: serviceBus
  name: queue.name
  properties: {
    maxDeliveryCount: queue.maxDeliveryCount
    lockDuration: queue.lockDuration
    deadLetteringOnMessageExpiration: queue.deadLetteringOnMessageExpiration
    requiresSession: queue.requiresSession
    requiresDuplicateDetection: queue.requiresDuplicateDetection
    duplicateDetectionHistoryTimeWindow: queue.duplicateDetectionHistoryTimeWindow
    defaultMessageTimeToLive: queue.?defaultMessageTimeToLive
    forwardTo: queue.?forwardTo
    forwardDeadLetteredMessagesTo: queue.?forwardDeadLetteredMessagesTo
  }
}]

resource topics 'Microsoft.ServiceBus/namespaces/topics@2024-01-01' = [for topic in namespace.topics: {
  parent: serviceBus
  name: topic.name
  properties: {
    requiresDuplicateDetection: topic.requiresDuplicateDetection
    duplicateDetectionHistoryTimeWindow: topic.duplicateDetectionHistoryTimeWindow
    defaultMessageTimeToLive: topic.?defaultMessageTimeToLive
  }
}]

resource subscriptions 'Microsoft.ServiceBus/namespaces/topics/subscriptions@2024-01-01' = [for subscription in namespace.subscriptions: {
  name: '${namespace.name}/${subscription.topic}/${subscription.name}'
  properties: {
    maxDeliveryCount: subscription.maxDeliveryCount
    lockDuration: subscription.lockDuration
    deadLetteringOnMessageExpiration: subscription.deadLetteringOnMessageExpiration
    deadLetteringOnFilterEvaluationExceptions: subscription.deadLetteringOnFilterEvaluationExceptions
    requiresSession: subscription.requiresSession
    defaultMessageTimeToLive: subscription.?defaultMessageTimeToLive
    forwardTo: subscription.?forwardTo
    forwardDeadLetteredMessagesTo: subscription.?forwardDeadLetteredMessagesTo
  }
  dependsOn: [
    topics
  ]
}]

// A subscription created through ARM gets a rule named $Default with a TrueFilter, and adding
// another rule does not remove it: on a replication subscription that TrueFilter would select
// replicas too and defeat loop prevention. The topology renders the loop-prevention rule
// (replication IS NULL / SET replication = 1) under the name $Default, which replaces it.
resource rules 'Microsoft.ServiceBus/namespaces/topics/subscriptions/rules@2024-01-01' = [for rule in namespace.rules: {
  name: '${namespace.name}/${rule.topic}/${rule.subscription}/${rule.name}'
  properties: {
    filterType: rule.filterType
    sqlFilter: rule.filterType == 'SqlFilter' ? {
      sqlExpression: rule.sqlExpression
      compatibilityLevel: 20
    } : null
    correlationFilter: rule.?correlationFilter
    action: contains(rule, 'actionSqlExpression') ? {
      sqlExpression: rule.actionSqlExpression
      compatibilityLevel: 20
    } : null
  }
  dependsOn: [
    subscriptions
  ]
}]

// Resource logs and metrics to the deployment's Log Analytics workspace (infra/README.md,
// "Diagnostics").
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: serviceBus
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        categoryGroup: 'allLogs'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'AllMetrics'
        enabled: true
      }
    ]
  }
}

output id string = serviceBus.id

// One Event Hubs namespace with its event hubs and consumer groups (rendered parameters).
@description('Namespace: name, location, sku, eventHubs, consumerGroups.')
param namespace object

@description('Resource id of the Log Analytics workspace that receives the resource logs and metrics.')
param logAnalyticsWorkspaceId string

resource eventHubs 'Microsoft.EventHub/namespaces@2024-01-01' = {
  name: namespace.name
  location: namespace.location
  sku: {
    name: namespace.sku
    tier: namespace.sku
    capacity: 1
  }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
  }
}

resource hubs 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' = [for hub in namespace.eventHubs: {
  parent: eventHubs
  name: hub.name
  properties: {
    partitionCount: hub.partitionCount
    // The retention the az CLI sets too (--retention-time-in-hours, --cleanup-policy), so both
    // provisioning paths send the same body.
    retentionDescription: {
      cleanupPolicy: 'Delete'
      retentionTimeInHours: hub.messageRetentionInDays * 24
    }
  }
}]

resource consumerGroups 'Microsoft.EventHub/namespaces/eventhubs/consumergroups@2024-01-01' = [for group in namespace.consumerGroups: {
  name: '${namespace.name}/${group.eventHub}/${group.name}'
  dependsOn: [
    hubs
  ]
}]

// Resource logs and metrics to the deployment's Log Analytics workspace (infra/README.md,
// "Diagnostics").
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: eventHubs
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

output id string = eventHubs.id

// One Event Hubs namespace with its event hubs and consumer groups (rendered parameters).
@description('Namespace: name, location, sku, eventHubs (name, partitionCount, messageRetentionInDays, captured), consumerGroups, capture (null, or storageAccount, container, intervalInSeconds, sizeLimitInBytes, archiveNameFormat, roleDefinitionId).')
param namespace object

// Event Hubs Capture (the topology's capture section): every event hub writes Avro files into
// one container of a storage account in this resource group, as the namespace's own
// system-assigned identity, which holds Storage Blob Data Contributor on that container only.
var captured = namespace.capture != null
var captureContainer = captured ? '${namespace.capture.storageAccount}/default/${namespace.capture.container}' : 'none/default/none'

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
  identity: captured ? {
    type: 'SystemAssigned'
  } : null
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
  }
}

resource captureBlobContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = if (captured) {
  name: captureContainer
}

resource captureRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (captured) {
  scope: captureBlobContainer
  name: guid(captureBlobContainer.id, eventHubs.id, 'capture')
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', captured ? namespace.capture.roleDefinitionId : 'none')
    principalId: eventHubs.identity.principalId
    principalType: 'ServicePrincipal'
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
    captureDescription: hub.captured ? {
      enabled: true
      encoding: 'Avro'
      intervalInSeconds: namespace.capture.intervalInSeconds
      sizeLimitInBytes: namespace.capture.sizeLimitInBytes
      skipEmptyArchives: false
      destination: {
        name: 'EventHubArchive.AzureBlockBlob'
        identity: {
          type: 'SystemAssigned'
        }
        properties: {
          storageAccountResourceId: resourceId('Microsoft.Storage/storageAccounts', namespace.capture.storageAccount)
          blobContainer: namespace.capture.container
          archiveNameFormat: namespace.capture.archiveNameFormat
        }
      }
    } : null
  }
  // The identity's role first: Capture writes as soon as it is enabled.
  dependsOn: [
    captureRole
  ]
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

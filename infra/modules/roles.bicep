// One data-plane role for the Function app's identity, scoped to one entity: Data Receiver on a
// task's source, Data Sender on its targets. Never namespace-wide, never Owner, never keys.
//
// A task reading a topic subscription gets Data Receiver on that subscription, not on the topic:
// Service Bus accepts role assignments at the queue, topic or subscription scope ("Authenticate
// a managed identity with Microsoft Entra ID to access Azure Service Bus resources", Resource
// scope), and the Functions docs require the topic trigger's role to have "effective scope over
// the Service Bus subscription resource" ("Configure connections to remote services in Azure
// Functions", Grant permissions to an identity).
//
// A Service Bus capture (the topology's capture section on a Service Bus namespace) writes blobs
// as the Function app: Storage Blob Data Contributor on its container (entityType container, the
// storage account in this resource group, the container existing), not on the storage account.
@description('namespace (for entityType container: the storage account), entityType (queue | topic | subscription | eventhub | container), entity, subscription (for entityType subscription: entity is its topic), role, roleDefinitionId.')
param assignment object

@description('Object id of the Function app managed identity.')
param principalId string

var roleDefinitionId = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', assignment.roleDefinitionId)

// Only subscription assignments carry a subscription name; the others get a stand-in so that
// the unused existing-resource name below is still well formed.
var subscriptionName = contains(assignment, 'subscription') ? assignment.subscription : 'none'

resource queue 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' existing = if (assignment.entityType == 'queue') {
  name: '${assignment.namespace}/${assignment.entity}'
}

resource topic 'Microsoft.ServiceBus/namespaces/topics@2024-01-01' existing = if (assignment.entityType == 'topic') {
  name: '${assignment.namespace}/${assignment.entity}'
}

resource topicSubscription 'Microsoft.ServiceBus/namespaces/topics/subscriptions@2024-01-01' existing = if (assignment.entityType == 'subscription') {
  name: '${assignment.namespace}/${assignment.entity}/${subscriptionName}'
}

resource eventHub 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' existing = if (assignment.entityType == 'eventhub') {
  name: '${assignment.namespace}/${assignment.entity}'
}

resource blobContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = if (assignment.entityType == 'container') {
  name: '${assignment.namespace}/default/${assignment.entity}'
}

resource onQueue 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (assignment.entityType == 'queue') {
  scope: queue
  name: guid(queue.id, principalId, roleDefinitionId)
  properties: {
    roleDefinitionId: roleDefinitionId
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

resource onTopic 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (assignment.entityType == 'topic') {
  scope: topic
  name: guid(topic.id, principalId, roleDefinitionId)
  properties: {
    roleDefinitionId: roleDefinitionId
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

resource onSubscription 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (assignment.entityType == 'subscription') {
  scope: topicSubscription
  name: guid(topicSubscription.id, principalId, roleDefinitionId)
  properties: {
    roleDefinitionId: roleDefinitionId
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

resource onEventHub 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (assignment.entityType == 'eventhub') {
  scope: eventHub
  name: guid(eventHub.id, principalId, roleDefinitionId)
  properties: {
    roleDefinitionId: roleDefinitionId
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

resource onContainer 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (assignment.entityType == 'container') {
  scope: blobContainer
  name: guid(blobContainer.id, principalId, roleDefinitionId)
  properties: {
    roleDefinitionId: roleDefinitionId
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}
